package bus

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Handler processes one JetStream message. Returning nil acknowledges it; an
// error asks for redelivery with backoff; an error for which IsPermanent is
// true terminates it.
type Handler func(ctx context.Context, msg jetstream.Msg) error

// Consume runs h for each message of cons until ctx ends; then it drains
// the subscription and returns. A user's messages (by the subject's
// <channel>.<id>) are handled one at a time in stream order, different
// users' at the same time, by up to ConsumeWorkers handlers: one person's
// slow message (a provider's rate limit, a retry) holds up only the people
// who share its worker, and a backlog is worked off at the speed of many
// round trips to JetStream at once, not of one. It alone
// acknowledges messages, so handlers never call Ack themselves, and it
// tells JetStream the message is in progress every third of the ack wait
// while its handler runs. Each handler gets its message's trace, as from
// Settle.
//
// A message whose handler fails is tried again in place, with the messages
// behind it in its worker waiting, for up to RetryInPlace: handed back for redelivery at
// once, it would come back after the ones behind it, and a user's messages
// would be routed out of order. (The usual failure is a moment without a
// stream leader on a cluster; an error that outlasts RetryInPlace is
// handed back.)
//
// On a pinned consumer (one active client at a time) it pulls in the
// consumer's priority group, and on the way out it unpins itself so the
// next client takes over at once instead of after the pin's TTL.
func Consume(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer, h Handler, log zerolog.Logger) error {
	info := cons.CachedInfo()
	name := info.Name
	log = log.With().Str("consumer", name).Logger()
	opts := []jetstream.PullConsumeOpt{jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if ctx.Err() == nil && !errors.Is(err, jetstream.ErrPinIDMismatch) {
			log.Warn().Err(err).Msg("consume")
		}
	})}
	if len(info.Config.PriorityGroups) > 0 {
		// Short-lived pull requests: after a pinned client dies, a waiting
		// one asks again soon and is pinned once the pin's TTL is over.
		opts = append(opts, jetstream.PullPriorityGroup(info.Config.PriorityGroups[0]), jetstream.PullExpiry(2*time.Second))
	}
	every := info.Config.AckWait / 3
	if every <= 0 {
		every = 10 * time.Second // the server's default ack wait is 30 s
	}
	w := startWorkers(ConsumeWorkers, func(msg jetstream.Msg) {
		stop := inProgress(msg, every)
		defer stop()
		settle(ctx, msg, h, log, RetryInPlace)
	})
	cc, err := cons.Consume(w.add, opts...)
	if err != nil {
		w.stop()
		return fmt.Errorf("consume %s: %w", name, err)
	}
	<-ctx.Done()
	cc.Drain()
	giveUp := time.After(10 * time.Second)
	select {
	case <-cc.Closed():
	case <-giveUp:
		cc.Stop()
	}
	select {
	case <-w.stop():
	case <-giveUp:
	}
	if groups := info.Config.PriorityGroups; len(groups) > 0 {
		uctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if s, err := js.Stream(uctx, info.Stream); err == nil {
			if err := s.UnpinConsumer(uctx, name, groups[0]); err != nil {
				log.Debug().Err(err).Msg("unpin")
			}
		}
	}
	return nil
}

// ConsumeWorkers is how many messages Consume handles at once, each of a
// different user.
const ConsumeWorkers = 16

// workers hand each message to the worker of its user, which handles its
// messages in the order they came.
type workers struct {
	queues  []chan jetstream.Msg
	closing chan struct{}
	once    sync.Once
	done    chan struct{}
}

func startWorkers(n int, handle func(jetstream.Msg)) *workers {
	w := &workers{queues: make([]chan jetstream.Msg, n), closing: make(chan struct{}), done: make(chan struct{})}
	var wg sync.WaitGroup
	for i := range w.queues {
		q := make(chan jetstream.Msg, 8)
		w.queues[i] = q
		wg.Go(func() {
			for {
				select {
				case msg := <-q:
					handle(msg)
				case <-w.closing:
					for { // what is queued already
						select {
						case msg := <-q:
							handle(msg)
						default:
							return
						}
					}
				}
			}
		})
	}
	go func() { wg.Wait(); close(w.done) }()
	return w
}

// add queues msg for its user's worker, waiting while that worker is 8
// messages behind. Once the workers stop, msg is left unacknowledged: it
// is delivered again.
func (w *workers) add(msg jetstream.Msg) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(userOfSubject(msg.Subject())))
	select {
	case w.queues[h.Sum32()%uint32(len(w.queues))] <- msg:
	case <-w.closing:
	}
}

// stop lets the workers finish what they hold; the channel closes when
// they have. The queues stay open: a delivery still under way when
// stop is called (the subscription stopped after a timeout) must not
// send on a closed channel.
func (w *workers) stop() <-chan struct{} {
	w.once.Do(func() { close(w.closing) })
	return w.done
}

// userOfSubject is "<channel>.<id>" of a subject ts.<kind>.<channel>.<id>…,
// or the whole subject if it is not one.
func userOfSubject(subject string) string {
	rest, ok := strings.CutPrefix(subject, "ts.")
	if !ok {
		return subject
	}
	_, rest, _ = strings.Cut(rest, ".") // the kind
	ch, rest, _ := strings.Cut(rest, ".")
	id, _, _ := strings.Cut(rest, ".")
	return ch + "." + id
}

// inProgress tells JetStream every d that msg is in hand, until stopped:
// a handler may take longer than the ack wait (a provider's rate limit)
// without its message being redelivered to another consumer meanwhile.
func inProgress(msg jetstream.Msg, d time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = msg.InProgress()
			}
		}
	}()
	return func() { close(done) }
}

// RetryInPlace is how long Consume keeps trying a failing message before
// it hands it back for redelivery.
const RetryInPlace = 20 * time.Second

// Settle runs h on msg and acknowledges according to its result. h gets
// msg's trace (HeaderTrace) in its context and on its logger
// (zerolog.Ctx), so all it publishes and logs carries the trace.
func Settle(ctx context.Context, msg jetstream.Msg, h Handler, log zerolog.Logger) {
	settle(ctx, msg, h, log, 0)
}

// settle is Settle trying h again for up to retryFor (the message kept in
// hand meanwhile) before asking for redelivery.
func settle(ctx context.Context, msg jetstream.Msg, h Handler, log zerolog.Logger, retryFor time.Duration) {
	ctx, l := Traced(ctx, log.With().Str("subject", msg.Subject()).Logger(), msg.Headers())
	md, mdErr := msg.Metadata()
	if mdErr == nil && md.NumDelivered > 1 {
		Redeliveries.WithLabelValues(md.Consumer).Inc()
	}
	run := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("panic: %v", p)
			}
		}()
		return h(l.WithContext(ctx), msg)
	}
	err := run()
	giveUp := time.Now().Add(retryFor)
	for wait := 100 * time.Millisecond; err != nil && !IsPermanent(err) && time.Now().Add(wait).Before(giveUp); wait = min(2*wait, 2*time.Second) {
		l.Warn().Err(err).Dur("retry_in_ms", wait).Msg("message failed; trying it again in place")
		_ = msg.InProgress()
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		if ctx.Err() != nil {
			break
		}
		err = run()
	}
	switch {
	case err == nil:
		if err := msg.Ack(); err != nil {
			l.Warn().Err(err).Msg("ack")
		}
	case IsPermanent(err):
		l.Error().Err(err).Msg("message terminated: it can never be processed")
		_ = msg.Term()
	default:
		delay := time.Second
		if mdErr == nil {
			delay = Backoff(md.NumDelivered)
		}
		l.Warn().Err(err).Dur("retry_in_ms", delay).Msg("message will be redelivered")
		_ = msg.NakWithDelay(delay)
	}
}

// Backoff is the redelivery delay after the nth delivery: 1 s doubling to 30 s.
func Backoff(delivered uint64) time.Duration {
	d := time.Second
	for i := uint64(1); i < delivered && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}
