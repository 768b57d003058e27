package channel

import (
	"context"
	"errors"
	"sync"
)

// Places is the delivery state every chat channel keeps: where each
// person is answered, and each conversation's progress message, edited in
// place. Its maps live as long as the process: after a restart a person
// is answered in their direct conversation until they write again.
type Places struct {
	mu     sync.Mutex
	last   map[string]string   // person → the conversation they last wrote in
	direct map[string]string   // person → their direct conversation with the bot
	status map[string]progress // conversation → its run's progress message
}

// progress is the message showing a run's progress in a conversation.
type progress struct{ job, id, text string }

// NewPlaces is an empty Places.
func NewPlaces() *Places {
	return &Places{last: map[string]string{}, direct: map[string]string{}, status: map[string]progress{}}
}

// Wrote records that person wrote in conversation.
func (p *Places) Wrote(person, conversation string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last[person] = conversation
}

// Conversation is where person is answered about a job that came from
// conversation from ("" when the job's id does not say: a scheduled
// task's, a notice's): there, else where they last wrote, else their
// direct conversation with the bot, which open opens once (then kept).
func (p *Places) Conversation(ctx context.Context, person, from string, open func(context.Context) (string, error)) (string, error) {
	if from != "" {
		return from, nil
	}
	p.mu.Lock()
	c, ok := p.last[person]
	if !ok {
		c, ok = p.direct[person]
	}
	p.mu.Unlock()
	if ok {
		return c, nil
	}
	c, err := open(ctx)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.direct[person] = c
	p.mu.Unlock()
	return c, nil
}

// Progress shows line as job's progress in conversation, in one message:
// posted (post) for the job's first line there, edited (edit, the
// message's id) for the next ones, nothing sent for a line already shown,
// posted anew when edit says ErrGone. It returns the message's id; post's
// and edit's other errors as they are.
func (p *Places) Progress(ctx context.Context, conversation, job, line string,
	post func(context.Context) (string, error), edit func(ctx context.Context, id string) error) (string, error) {
	p.mu.Lock()
	st, ok := p.status[conversation]
	p.mu.Unlock()
	if ok && st.job == job {
		if st.text == line {
			return st.id, nil
		}
		err := edit(ctx, st.id)
		if err == nil {
			p.shown(conversation, progress{job: job, id: st.id, text: line})
			return st.id, nil
		}
		if !errors.Is(err, ErrGone) {
			return "", err
		}
	}
	id, err := post(ctx)
	if err != nil {
		return "", err
	}
	p.shown(conversation, progress{job: job, id: id, text: line})
	return id, nil
}

func (p *Places) shown(conversation string, st progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status[conversation] = st
}
