package egress

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// queue holds each person's events and hands them to out in order, one
// at a time, each acknowledged by bus.Settle as out's send of it
// ends: nil acknowledges it, an error asks for it again with backoff, a
// permanent error terminates it. Queued events are kept in hand (touch),
// and handed back at shutdown. Progress is coalesced: at most one per
// the channel's Rules.ProgressEvery, the latest wins, and a reply makes
// any waiting progress moot.
type queue struct {
	out eventSender
	log zerolog.Logger

	mu    sync.Mutex
	users map[string]*userQueue // by user key
}

// eventSender is what the queue asks of the outbox.
type eventSender interface {
	// send sends the event it; ctx carries its logger (zerolog.Ctx).
	send(ctx context.Context, it item) error
	// progressEvery spaces u's progress lines.
	progressEvery(u contract.User) time.Duration
}

type userQueue struct {
	items []item // waiting, oldest first; guarded by queue.mu
	wake  chan struct{}
	busy  map[uint64]bool // sequences queued or being handled
}

func newQueue(out eventSender, log zerolog.Logger) *queue {
	return &queue{out: out, log: log, users: map[string]*userQueue{}}
}

// add queues it for its person, whose worker starts if none runs. A
// redelivery of an event already in hand is left alone: the first
// delivery's settling acknowledges it.
func (q *queue) add(ctx context.Context, it item) {
	u := it.ev.User
	q.mu.Lock()
	defer q.mu.Unlock()
	uq := q.users[u.Key()]
	if uq == nil {
		uq = &userQueue{wake: make(chan struct{}, 1), busy: map[uint64]bool{}}
		q.users[u.Key()] = uq
		go q.work(ctx, u, uq)
	}
	if uq.busy[it.seq] {
		return
	}
	uq.busy[it.seq] = true
	uq.items = append(uq.items, it)
	select {
	case uq.wake <- struct{}{}:
	default:
	}
}

// touch tells JetStream that queued events are in hand, so it does not
// redeliver them while an earlier message of the same person is retried.
func (q *queue) touch() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, uq := range q.users {
		for _, it := range uq.items {
			_ = it.msg.InProgress()
		}
	}
}

// handBack returns the events still queued at shutdown, unhandled, for
// the next egress to take at once: the one acknowledgement not made by
// bus.Settle, as no handler ran.
func (q *queue) handBack() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, uq := range q.users {
		for _, it := range uq.items {
			_ = it.msg.Nak()
		}
		uq.items = nil
	}
}

// next takes uq's oldest event off it.
func (q *queue) next(uq *userQueue) (item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(uq.items) == 0 {
		return item{}, false
	}
	it := uq.items[0]
	uq.items = uq.items[1:]
	return it, true
}

// done forgets the event at seq, settled.
func (q *queue) done(uq *userQueue, seq uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(uq.busy, seq)
}

// retire ends u's queue when it has nothing left (idle: nothing waits in
// its worker either).
func (q *queue) retire(u contract.User, uq *userQueue, idle bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(uq.items) > 0 || !idle {
		return false
	}
	delete(q.users, u.Key())
	return true
}

const userIdle = time.Minute

// worker is the state of one person's queue while it works: the
// progress line put aside for its turn.
type worker struct {
	out          eventSender
	log          zerolog.Logger
	every        time.Duration // Rules.ProgressEvery
	pending      *item         // progress waiting for its turn
	lastProgress time.Time
	timer        *time.Timer // pending's turn
}

// work delivers u's events in order until ctx ends, or until u has had
// nothing for userIdle.
func (q *queue) work(ctx context.Context, u contract.User, uq *userQueue) {
	w := &worker{out: q.out, log: q.log.With().Str("user", u.Key()).Logger(), every: q.out.progressEvery(u),
		timer: time.NewTimer(time.Hour)}
	w.timer.Stop()
	idle := time.NewTimer(userIdle)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.timer.C:
			w.sendPending(ctx)
			continue
		case <-idle.C:
			if q.retire(u, uq, w.pending == nil) {
				return
			}
			idle.Reset(userIdle)
			continue
		case <-uq.wake:
		}
		for it, ok := q.next(uq); ok; it, ok = q.next(uq) {
			bus.Settle(ctx, it.msg, func(ctx context.Context, _ jetstream.Msg) error { return w.take(ctx, it) }, w.log)
			q.done(uq, it.seq)
		}
		idle.Reset(userIdle)
	}
}

// take sends it, or puts a progress line that comes too soon aside for
// its turn: then it is done with at once (NATS has it; the person gets
// the latest). A reply drops the progress put aside.
func (w *worker) take(ctx context.Context, it item) error {
	switch it.ev.Kind {
	case contract.KindProgress:
		if wait := w.every - time.Since(w.lastProgress); wait > 0 {
			if w.pending == nil {
				w.timer.Reset(wait)
			}
			w.pending = &it
			return nil
		}
		defer func() { w.lastProgress = time.Now() }()
	case contract.KindDone:
		if w.pending != nil {
			w.pending = nil
			w.timer.Stop()
		}
	}
	return w.out.send(ctx, it)
}

// sendPending sends the progress line put aside, now that its turn came.
// It was acknowledged when put aside: a failure here loses one progress
// line, which the next one replaces anyway.
func (w *worker) sendPending(ctx context.Context) {
	if w.pending == nil {
		return
	}
	ctx, log := bus.Traced(ctx, w.log, w.pending.msg.Headers())
	if err := w.out.send(log.WithContext(ctx), *w.pending); err != nil {
		log.Warn().Err(err).Msg("progress not sent")
	}
	w.lastProgress, w.pending = time.Now(), nil
}
