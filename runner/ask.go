package runner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/clock"
)

// conversation is what the person says to a running job: the answers to
// its questions and the messages added to it (btw), read from EVENTS.
type conversation struct {
	answers chan contract.Event
	steers  chan string
	stop    func()
}

// converse reads the person's answers and added messages for job until
// stop. Everything the dispatcher publishes for the job comes after the
// person sent the message, so reading from then on misses nothing, even
// what was published before the job reached this runner.
func (r *Runner) converse(ctx context.Context, job contract.Job) (*conversation, error) {
	log := zerolog.Ctx(ctx)
	start := job.At.Add(-time.Minute) // clocks of other machines
	cons, err := r.js.OrderedConsumer(ctx, contract.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contract.EventSubject(job.User, contract.KindAnswer), contract.EventSubject(job.User, contract.KindSteer)},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &start,
		// The server drops it soon after the run stops reading.
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("read answers: %w", err)
	}
	c := &conversation{answers: make(chan contract.Event, 16), steers: make(chan string, 16)}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var ev contract.Event
		if contract.Decode(m.Data(), &ev) != nil || ev.JobID != job.ID {
			return
		}
		ch := c.answers
		if ev.Kind == contract.KindSteer {
			select {
			case c.steers <- ev.Text:
			default:
				log.Warn().Msg("too many messages added to the run at once; one dropped")
			}
			return
		}
		select {
		case ch <- ev:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read answers: %w", err)
	}
	var once sync.Once
	c.stop = func() { once.Do(cc.Stop) }
	return c, nil
}

// leftover is what was added to the run but never reached the agent.
func (c *conversation) leftover() []string {
	var out []string
	for {
		select {
		case s := <-c.steers:
			out = append(out, s)
		default:
			return out
		}
	}
}

// errNoAnswer: nobody answered in time.
var errNoAnswer = errors.New("no answer")

// wait returns the answer to question n, or errNoAnswer after patience.
func (c *conversation) wait(ctx context.Context, n int, patience time.Duration) (contract.Event, error) {
	t := time.NewTimer(patience)
	defer t.Stop()
	for {
		select {
		case ev := <-c.answers:
			if ev.Question == n {
				return ev, nil
			}
		case <-t.C:
			return contract.Event{}, errNoAnswer
		case <-ctx.Done():
			return contract.Event{}, ctx.Err()
		}
	}
}

// errRunTimeout is the cause of a run that reached its time limit.
var errRunTimeout = errors.New("run took too long")

// asker is agent.Run.Ask for job: it asks the person unless their "always"
// rules allow the tool use, and waits for the answer with the run's time
// limit stopped. waiting tells the run's heartbeat.
func (r *Runner) asker(log zerolog.Logger, job contract.Job, session string,
	conv *conversation, limit *clock.Deadline, waiting func(bool)) func(context.Context, agent.Question) agent.Answer {
	always := agent.LoadAllowList(filepath.Join(r.cfg.Workspaces, ".always", job.User.Key()+".json"), session)
	n := 0
	return func(ctx context.Context, q agent.Question) agent.Answer {
		if always.Allows(q.Tool, q.Input) {
			log.Info().Str("tool", q.Tool).Msg("tool use allowed by an earlier always")
			return agent.Answer{Decision: contract.AnswerAllow}
		}
		n++
		ev := contract.NewQuestion(job.User, job.ID, n, q.Text)
		if err := bus.PublishEvent(ctx, r.js, ev, contract.MsgID(job.User, job.ID, "question", fmt.Sprint(n))); err != nil {
			log.Error().Err(err).Msg("question not asked; the tool use is denied")
			return agent.Answer{Decision: contract.AnswerDeny, Text: contract.DeniedNobody}
		}
		log.Info().Int("question", n).Str("tool", q.Tool).Msg("asked the person")
		limit.Pause()
		waiting(true)
		a, err := conv.wait(ctx, n, r.cfg.PermissionTimeout+time.Minute)
		waiting(false)
		limit.Resume()
		switch {
		case errors.Is(err, errNoAnswer):
			log.Warn().Int("question", n).Msg("no answer from the dispatcher in time; denied")
			return agent.Answer{Decision: contract.AnswerDeny, Text: "The person did not answer in time, so this was not allowed."}
		case err != nil:
			return agent.Answer{Decision: contract.AnswerDeny, Text: "The run was stopped."}
		}
		log.Info().Int("question", n).Str("answer", a.Answer).Msg("answered")
		if a.Answer == contract.AnswerAlways {
			if err := always.Add(q.Session, q.Rule); err != nil {
				log.Warn().Err(err).Msg("always not kept for later runs")
			}
		}
		if a.Answer == contract.AnswerDeny && a.Text == "" {
			a.Text = contract.DeniedNo
		}
		return agent.Answer{Decision: a.Answer, Text: a.Text}
	}
}

// notAdded tells the person which of their messages for the run never
// reached the agent: it had ended, or it takes none while it works.
func (r *Runner) notAdded(ctx context.Context, job contract.Job, conv *conversation) string {
	var late []string
	if conv != nil {
		conv.stop()
		late = conv.leftover()
	} else {
		var err error
		if late, err = r.steersOf(ctx, job); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Int("read", len(late)).Msg("messages added to the run not all read")
		}
	}
	if len(late) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Not added to this run (it had finished, or its agent takes no messages while it works); send again what you still need:")
	for _, t := range late {
		b.WriteString("\n• " + contract.CutRunes(contract.FirstLine(t), 100))
	}
	return b.String()
}

// steersOf reads, in order, every message the person added to job (btw)
// from EVENTS: a run whose agent takes none while it works left them all.
// The person's last one is looked at first (one request): most runs have
// none, and reading them all makes a consumer.
func (r *Runner) steersOf(ctx context.Context, job contract.Job) ([]string, error) {
	last, err := r.events.GetLastMsgForSubject(ctx, contract.EventSubject(job.User, contract.KindSteer))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	var ev contract.Event
	if err == nil && (contract.Decode(last.Data, &ev) != nil || ev.JobID != job.ID) {
		return nil, nil // the last one added was to another job: none to this one since
	}
	start := job.At.Add(-time.Minute) // clocks of other machines
	cons, err := r.js.OrderedConsumer(ctx, contract.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contract.EventSubject(job.User, contract.KindSteer)},
		DeliverPolicy:  jetstream.DeliverByStartTimePolicy,
		OptStartTime:   &start,
	})
	if err != nil {
		return nil, fmt.Errorf("read added messages: %w", err)
	}
	var out []string
	for {
		batch, err := cons.FetchNoWait(16)
		if err != nil {
			return out, fmt.Errorf("read added messages: %w", err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			var ev contract.Event
			if contract.Decode(m.Data(), &ev) == nil && ev.JobID == job.ID {
				out = append(out, ev.Text)
			}
		}
		if err := batch.Error(); err != nil {
			return out, fmt.Errorf("read added messages: %w", err)
		}
		if n == 0 {
			return out, nil
		}
	}
}
