package egress

import (
	"context"
	"fmt"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/contract/bus"
)

// pusher delivers the channels that push (WhatsApp, SMS, Telegram): it
// takes each channel's events from its consumer and queues those to send
// per person (queue), in order; the queue hands them to the outbox, which
// composes them for the channel and sends each message through the holder
// (held outside WhatsApp's reply window) and the ledger (sent once,
// retried, dead letters).
type pusher struct {
	js     jetstream.JetStream
	log    zerolog.Logger
	retry  channel.Retry
	status *sentWaiter // nil: do not wait for delivery status

	channels map[string]outlet
	// bucket is the channels' egress bucket (contract.EgressBucketOf).
	bucket string
	// allow is who may be answered: EVENTS can be written by more than
	// textslash's own services, and a send costs the operator money and
	// reputation.
	allow  *access.Allowlist
	typing typing
}

// outlet is one channel as the pusher delivers to it.
type outlet struct {
	rules  channel.Rules
	sender channel.Sender
	// mediaURL is the link to an image that the channel's messages carry.
	mediaURL func(contract.Image) string
	// attach, when set, reads each link's bytes before a send.
	attach func(ctx context.Context, ref string) (channel.Attachment, error)
	// waitSent: the provider reports delivery status (Twilio), and a
	// user's next message waits for "sent".
	waitSent bool
	// window, when set, is the channel's reply window: messages refused
	// outside it are held until the person writes again (window.go).
	window *window
}

// run consumes every channel's events until ctx ends, keeping what it
// sends in kv, the egress bucket.
func (p *pusher) run(ctx context.Context, kv jetstream.KeyValue) error {
	if err := p.allow.Open(ctx, p.js); err != nil {
		return err
	}
	h := &holder{kv: kv, js: p.js, log: p.log, once: &ledger{kv: kv, js: p.js, retry: p.retry, status: p.status}}
	q := newQueue(&outbox{channels: p.channels, parts: h, pages: &pageStore{kv: kv}}, p.log)
	ccs := make([]jetstream.ConsumeContext, 0, len(p.channels))
	defer func() {
		for _, cc := range ccs {
			cc.Stop()
		}
	}()
	for name := range p.channels {
		cons, err := p.js.CreateOrUpdateConsumer(ctx, contract.StreamEvents, bus.EgressConsumer(name))
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while starting
			}
			return fmt.Errorf("egress consumer %s: %w", name, err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) { p.receive(ctx, q, m) },
			jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
				if ctx.Err() == nil {
					p.log.Warn().Err(err).Str("channel", name).Msg("consume")
				}
			}))
		if err != nil {
			return fmt.Errorf("egress consume %s: %w", name, err)
		}
		ccs = append(ccs, cc)
	}
	refresh := time.NewTicker(time.Hour)
	defer refresh.Stop()
	for {
		if p.windowed() {
			h.refresh(ctx, heldRefresh)
		}
		if _, err := keepAlive(ctx, refresh.C, q.touch); err != nil {
			q.handBack()
			return nil
		}
	}
}

// receive takes one event from a channel's consumer: an event to send
// joins its person's queue, which settles it once sent; any other is
// settled at once with what take made of it.
func (p *pusher) receive(ctx context.Context, q *queue, m jetstream.Msg) {
	it, send, err := p.take(ctx, m)
	if send {
		q.add(ctx, it)
		return
	}
	bus.Settle(ctx, m, func(context.Context, jetstream.Msg) error { return err }, p.log)
}

// take reads one event and does what needs no queue: a delivery report
// settles a wait; the typing indicator's cues start or stop it; an event
// for somebody not allowed is dropped. It reports the events to send,
// and returns nil when done with the event, a permanent error
// (bus.IsPermanent) when it can never be read.
func (p *pusher) take(ctx context.Context, m jetstream.Msg) (item, bool, error) {
	md, err := m.Metadata()
	if err != nil {
		return item{}, false, fmt.Errorf("%w: no metadata: %v", contract.ErrInvalidPayload, err)
	}
	var ev contract.Event
	if err := contract.Decode(m.Data(), &ev); err != nil {
		return item{}, false, fmt.Errorf("undecodable event: %w", err)
	}
	switch ev.Kind {
	case contract.KindNotice, contract.KindProgress, contract.KindDone, contract.KindMore, contract.KindQuestion:
	case contract.KindStarted, contract.KindAnswer: // the typing indicator's cues
	case contract.KindWindow: // the person wrote: send what was held
	case contract.KindDelivery:
		if p.status != nil {
			p.status.report(ev.ProviderID, ev.Status, ev.Code)
		}
		return item{}, false, nil
	default:
		return item{}, false, nil
	}
	ch, ok := p.channels[ev.User.Channel]
	if !ok {
		return item{}, false, nil
	}
	if !p.allowed(ctx, ev.User) {
		log := bus.TraceLog(p.log, bus.Trace(m.Headers()))
		log.Error().Str("user", ev.User.Key()).Str("channel", ev.User.Channel).Str("kind", string(ev.Kind)).Str("subject", m.Subject()).Uint64("seq", md.Sequence.Stream).
			Msg("event for a user not allowed dropped: nobody on the channel's allowlist (its ALLOWED setting: ALLOWED_PHONE_NUMBERS, TELEGRAM_ALLOWED_CHATS, SLACK_ALLOWED, DISCORD_ALLOWED) or paired in sent it; something else published it")
		refused.WithLabelValues(ev.User.Channel).Inc()
		return item{}, false, nil
	}
	switch ev.Kind {
	case contract.KindStarted, contract.KindAnswer:
		p.typing.note(ctx, ch, ev)
		return item{}, false, nil
	case contract.KindDone, contract.KindQuestion:
		p.typing.note(ctx, ch, ev)
	}
	return item{msg: m, ev: ev, seq: md.Sequence.Stream}, true, nil
}

// allowed reports whether u may be answered (access.Allowlist); the
// people bucket, when it cannot be read, answers no.
func (p *pusher) allowed(ctx context.Context, u contract.User) bool {
	ok, err := p.allow.AllowsNow(ctx, u)
	if err != nil {
		p.log.Warn().Err(err).Str("user", u.Key()).Msg("people bucket")
	}
	return ok
}

// windowed reports whether a channel has a reply window.
func (p *pusher) windowed() bool {
	for _, ch := range p.channels {
		if ch.window != nil {
			return true
		}
	}
	return false
}

// send sends m through the outlet's Sender.
func (o outlet) send(ctx context.Context, u contract.User, m channel.Message) (string, error) {
	m, err := o.attached(ctx, m)
	if err != nil {
		return "", err
	}
	return o.sender.Send(ctx, u, m)
}

// find is the provider's id of a message like m to u sent since then, as
// the outlet's Sender finds it; "" when it finds none or is no Finder.
func (o outlet) find(ctx context.Context, u contract.User, m channel.Message, since time.Time) (string, error) {
	f, ok := o.sender.(channel.Finder)
	if !ok {
		return "", nil
	}
	m, err := o.attached(ctx, m)
	if err != nil {
		return "", err
	}
	return f.Find(ctx, u, m, since)
}

// attached is m with each of its Media read into its Attachments, when
// the outlet reads them.
func (o outlet) attached(ctx context.Context, m channel.Message) (channel.Message, error) {
	if o.attach == nil || len(m.Media) == 0 {
		return m, nil
	}
	m.Attachments = make([]channel.Attachment, 0, len(m.Media))
	for _, ref := range m.Media {
		a, err := o.attach(ctx, ref)
		if err != nil {
			return m, err
		}
		m.Attachments = append(m.Attachments, a)
	}
	return m, nil
}
