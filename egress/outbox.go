package egress

import (
	"context"
	"errors"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/pages"
)

// outbox sends events to people: an event composed into its channel's
// messages (Rules), each sent once through parts; a long reply's pages
// kept for "more" (pageStore); a window event sends what was held.
type outbox struct {
	channels map[string]outlet
	parts    parts
	pages    *pageStore
}

// parts is what the outbox asks of the holder (window.go), which stands
// in front of the ledger: part of an event sent once, or held outside
// the person's reply window; and what was held sent once they write.
type parts interface {
	sendPart(ctx context.Context, log zerolog.Logger, ch outlet, it item, part int, m channel.Message) error
	flush(ctx context.Context, log zerolog.Logger, ch outlet, it item) error
}

// item is one event to send.
type item struct {
	msg jetstream.Msg
	ev  contract.Event
	seq uint64 // its EVENTS sequence
}

// send sends the messages of the event it; ctx carries its logger
// (zerolog.Ctx). nil: done with it (sent, held, or a dead letter
// published); an error: it may be sent again.
func (o *outbox) send(ctx context.Context, it item) error {
	ch, log := o.channels[it.ev.User.Channel], *zerolog.Ctx(ctx)
	switch it.ev.Kind {
	case contract.KindMore:
		return o.more(ctx, log, ch, it)
	case contract.KindWindow:
		return o.parts.flush(ctx, log, ch, it)
	}
	msgs, err := o.compose(ctx, ch, it.ev)
	if err != nil {
		return err
	}
	for i, m := range msgs {
		if m.Body == "" && len(m.Media) == 0 {
			continue
		}
		if err := o.parts.sendPart(ctx, log, ch, it, i, m); err != nil {
			if errors.Is(err, errHeld) {
				continue // the parts behind it are held too
			}
			return handled(err)
		}
	}
	return nil
}

// compose is the messages of ev on ch: a reply's, its pages after them
// kept for "more"; one message for anything else.
func (o *outbox) compose(ctx context.Context, ch outlet, ev contract.Event) ([]channel.Message, error) {
	if ev.Kind != contract.KindDone {
		return []channel.Message{{Body: pages.Truncate(ev.Text, ch.rules.BodyLimit, "…"), Progress: ev.Kind == contract.KindProgress,
			JobID: ev.JobID, Choices: ev.Choices}}, nil
	}
	msgs, rest := compose(ch.rules, ev.Text, ev.Images, ch.mediaURL)
	if err := o.pages.keep(ctx, ev.User, ev.JobID, rest); err != nil {
		return nil, err
	}
	for i := range msgs {
		msgs[i].JobID = ev.JobID // a channel sends them where the job came from
	}
	if len(msgs) > 0 {
		msgs[len(msgs)-1].Choices, msgs[len(msgs)-1].Links = ev.Choices, ev.Links
	}
	return msgs, nil
}

// progressEvery spaces u's progress lines (Rules.ProgressEvery).
func (o *outbox) progressEvery(u contract.User) time.Duration {
	return o.channels[u.Channel].rules.ProgressEvery
}

// handled is err of a message, nil when the message is done with: held
// for the person (errHeld), or not sent with a dead letter saying so
// (errUndeliverable).
func handled(err error) error {
	if errors.Is(err, errHeld) || errors.Is(err, errUndeliverable) {
		return nil
	}
	return err
}
