package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress/internal/pages"
)

// pusher delivers one or more channels' events through Senders: per user
// in order, one event at a time, each message once.
type pusher struct {
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	log    zerolog.Logger
	retry  Retry
	status *sentWaiter // nil: do not wait for delivery status

	channels map[string]channel
	typing   typing
	// people paired in (contract.Pairing) may be answered too.
	people  *contract.People
	pairing *contract.Pairing

	mu    sync.Mutex
	users map[string]*userQueue // by user key
	// noPages are the people known to have no pages left (pagesKey):
	// egress alone writes them, so a short reply need not clear them.
	noPages map[string]bool
}

type channel struct {
	rules  Rules
	sender Sender
	// mediaURL is the link to an image that the channel's messages carry.
	mediaURL func(contract.Image) string
	// waitSent: the provider reports delivery status (Twilio), and a
	// user's next message waits for "sent".
	waitSent bool
	// allowed are the user ids the channel may send to (the allowlist
	// ingress admits by): EVENTS can be written by more than textslash's
	// own services, and a send costs the operator money and reputation.
	allowed map[string]bool
	// window, when set, is the channel's reply window: messages refused
	// outside it are held until the person writes again (window.go).
	window *window
}

// item is one event in a user's queue.
type item struct {
	msg jetstream.Msg
	ev  contract.Event
	seq uint64
}

type userQueue struct {
	items []item // waiting, oldest first; guarded by pusher.mu
	wake  chan struct{}
	busy  map[uint64]bool // sequences queued or being handled
}

// run consumes every channel's events until ctx ends.
func (p *pusher) run(ctx context.Context) error {
	var err error
	if p.pairing, err = contract.OpenPairing(ctx, p.js); err != nil {
		return err
	}
	if p.people, err = contract.WatchPeople(ctx, p.js); err != nil {
		return err
	}
	ccs := make([]jetstream.ConsumeContext, 0, len(p.channels))
	defer func() {
		for _, cc := range ccs {
			cc.Stop()
		}
	}()
	for name := range p.channels {
		cons, err := p.js.CreateOrUpdateConsumer(ctx, contract.StreamEvents, contract.EgressConsumer(name))
		if err != nil {
			if ctx.Err() != nil {
				return nil // stopped while starting
			}
			return fmt.Errorf("egress consumer %s: %w", name, err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) { p.route(ctx, m) },
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
	p.refreshHeld(ctx, heldRefresh)
	for {
		if _, err := keepAlive(ctx, refresh.C, p.touchQueued); err != nil {
			p.handBack()
			return nil
		}
		p.refreshHeld(ctx, heldRefresh)
	}
}

// route files one event: delivery reports settle waits at once; events
// for the person join the user's queue; the rest is not for egress.
func (p *pusher) route(ctx context.Context, m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		_ = m.Term()
		return
	}
	var ev contract.Event
	if err := contract.Decode(m.Data(), &ev); err != nil {
		log := contract.TraceLog(p.log, contract.Trace(m.Headers()))
		log.Error().Err(err).Str("subject", m.Subject()).Msg("undecodable event terminated")
		_ = m.Term()
		return
	}
	switch ev.Kind {
	case contract.KindNotice, contract.KindProgress, contract.KindDone, contract.KindMore, contract.KindQuestion:
	case contract.KindStarted, contract.KindAnswer: // the typing indicator's cues
	case contract.KindWindow: // the person wrote: send what was held
	case contract.KindDelivery:
		if p.status != nil {
			p.status.report(ev.ProviderID, ev.Status, ev.Code)
		}
		_ = m.Ack()
		return
	default:
		_ = m.Ack()
		return
	}
	ch, ok := p.channels[ev.User.Channel]
	if !ok {
		_ = m.Ack()
		return
	}
	if !p.allowed(ctx, ch, ev.User) {
		log := contract.TraceLog(p.log, contract.Trace(m.Headers()))
		log.Error().Str("user", ev.User.Key()).Str("kind", string(ev.Kind)).Str("subject", m.Subject()).Uint64("seq", md.Sequence.Stream).
			Msg("event for a user not allowed dropped: nobody on the channel's allowlist (ALLOWED_PHONE_NUMBERS, TELEGRAM_ALLOWED_CHATS) sent it; something else published it")
		refused.WithLabelValues(ev.User.Channel).Inc()
		_ = m.Ack()
		return
	}
	switch ev.Kind {
	case contract.KindStarted, contract.KindAnswer, contract.KindDone, contract.KindQuestion:
		p.typing.note(ctx, ch, ev)
	}
	if ev.Kind == contract.KindStarted || ev.Kind == contract.KindAnswer {
		_ = m.Ack()
		return
	}
	key := ev.User.Key()
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.users[key]
	if q == nil {
		q = &userQueue{wake: make(chan struct{}, 1), busy: map[uint64]bool{}}
		p.users[key] = q
		go p.work(ctx, ev.User, q)
	}
	if q.busy[md.Sequence.Stream] {
		return // a redelivery of an event already in hand
	}
	q.busy[md.Sequence.Stream] = true
	q.items = append(q.items, item{msg: m, ev: ev, seq: md.Sequence.Stream})
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// allowed reports whether u may be answered on ch: listed in the
// configuration, or paired in (the watched set, else the bucket itself:
// the watch may not have seen someone paired in a moment ago).
func (p *pusher) allowed(ctx context.Context, ch channel, u contract.User) bool {
	if ch.allowed[u.ID] || p.people.Has(u) {
		return true
	}
	ok, err := p.pairing.Has(ctx, u)
	if err != nil {
		p.log.Warn().Err(err).Str("user", u.Key()).Msg("people bucket")
	}
	return ok
}

// keepAliveEvery is how often egress tells JetStream that events it holds
// are still in hand: well within contract.EgressAckWait, so that none is
// redelivered while egress waits (a retry's delay, a status callback, an
// earlier message of the same person).
const keepAliveEvery = contract.EgressAckWait / 3

// keepAlive waits for a value from ready, or for ctx to end (its error),
// calling touch every keepAliveEvery meanwhile: touch keeps the events
// waited for in hand.
func keepAlive[T any](ctx context.Context, ready <-chan T, touch func()) (T, error) {
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	for {
		select {
		case v := <-ready:
			return v, nil
		case <-tick.C:
			touch()
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// inProgress is keepAlive's touch for one event: msg is in hand.
func inProgress(msg jetstream.Msg) func() {
	return func() { _ = msg.InProgress() }
}

// touchQueued tells JetStream that queued events are in hand, so it does
// not redeliver them while an earlier message of the same user is retried.
func (p *pusher) touchQueued() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.users {
		for _, it := range q.items {
			_ = it.msg.InProgress()
		}
	}
}

// handBack returns queued events at shutdown, for the next egress.
func (p *pusher) handBack() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, q := range p.users {
		for _, it := range q.items {
			_ = it.msg.Nak()
		}
		q.items = nil
	}
}

const userIdle = time.Minute

// work delivers one user's events in order. Progress is coalesced: at most
// one per Rules.ProgressEvery, the latest wins, and a reply makes any
// waiting progress moot.
func (p *pusher) work(ctx context.Context, u contract.User, q *userQueue) {
	ch := p.channels[u.Channel]
	log := p.log.With().Str("user", u.Key()).Logger()
	var (
		pending      *item // progress waiting for its turn
		lastProgress time.Time
		timer        = time.NewTimer(time.Hour)
	)
	timer.Stop()
	idle := time.NewTimer(userIdle)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
			if pending != nil {
				// Acknowledged when it was put aside: a failure here loses
				// one progress line, which the next one replaces anyway.
				ctx, log := contract.Traced(ctx, log, pending.msg.Headers())
				if err := p.send(ctx, log, ch, *pending); err != nil {
					log.Warn().Err(err).Msg("progress not sent")
				}
				lastProgress, pending = time.Now(), nil
			}
			continue
		case <-idle.C:
			p.mu.Lock()
			if len(q.items) == 0 && pending == nil {
				delete(p.users, u.Key())
				p.mu.Unlock()
				return
			}
			p.mu.Unlock()
			idle.Reset(userIdle)
			continue
		case <-q.wake:
		}
		for {
			p.mu.Lock()
			if len(q.items) == 0 {
				p.mu.Unlock()
				break
			}
			it := q.items[0]
			q.items = q.items[1:]
			p.mu.Unlock()

			switch it.ev.Kind {
			case contract.KindProgress:
				if wait := ch.rules.ProgressEvery - time.Since(lastProgress); wait > 0 {
					_ = it.msg.Ack() // NATS has it; the person gets the latest
					if pending == nil {
						timer.Reset(wait)
					}
					pending = &it
				} else {
					p.deliver(ctx, log, ch, it)
					lastProgress = time.Now()
				}
			case contract.KindDone:
				if pending != nil {
					pending = nil
					timer.Stop()
				}
				p.deliver(ctx, log, ch, it)
			default:
				p.deliver(ctx, log, ch, it)
			}
			p.mu.Lock()
			delete(q.busy, it.seq)
			p.mu.Unlock()
		}
		idle.Reset(userIdle)
	}
}

// deliver sends one event and settles it. Settle puts the event's trace
// on the context and the logger it hands on, so the send's lines and a
// dead letter carry it.
func (p *pusher) deliver(ctx context.Context, log zerolog.Logger, ch channel, it item) {
	contract.Settle(ctx, it.msg, func(ctx context.Context, m jetstream.Msg) error {
		return p.send(ctx, *zerolog.Ctx(ctx), ch, it)
	}, log)
}

// send composes the messages of one event for its channel and sends each
// once (sendOnce); "more" takes the next page, a window event sends what
// was held.
func (p *pusher) send(ctx context.Context, log zerolog.Logger, ch channel, it item) error {
	ev, u := it.ev, it.ev.User
	var msgs []Message
	switch ev.Kind {
	case contract.KindDone:
		var rest []string
		msgs, rest = ch.rules.compose(ev.Text, ev.Images, ch.mediaURL)
		if len(rest) > 0 {
			p.setNoPages(u, false)
			data, _ := json.Marshal(pagesLeft{JobID: ev.JobID, Pages: rest})
			if _, err := p.kv.Put(ctx, pagesKey(u), data); err != nil {
				return fmt.Errorf("store pages: %w", err)
			}
		} else if !p.hasNoPages(u) {
			if err := p.kv.Delete(ctx, pagesKey(u)); err != nil {
				return fmt.Errorf("clear pages: %w", err)
			}
			p.setNoPages(u, true)
		}
		if len(msgs) > 0 {
			msgs[len(msgs)-1].Choices = ev.Choices
		}
	case contract.KindMore:
		return p.more(ctx, log, ch, it)
	case contract.KindWindow:
		return p.flush(ctx, log, ch, it)
	default:
		msgs = []Message{{Body: pages.Truncate(ev.Text, ch.rules.BodyLimit, "…"), Progress: ev.Kind == contract.KindProgress,
			JobID: ev.JobID, Choices: ev.Choices}}
	}
	for i, m := range msgs {
		if m.Body == "" && len(m.Media) == 0 {
			continue
		}
		if err := p.sendOnce(ctx, log, ch, it, i, m); err != nil {
			if errors.Is(err, errHeld) {
				continue // the parts behind it are held too
			}
			if errors.Is(err, errUndeliverable) {
				return nil
			}
			return err
		}
	}
	return nil
}
