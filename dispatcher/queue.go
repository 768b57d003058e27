// The queue: messages waiting behind a person's run in the QUEUE stream,
// whose per-subject limit refuses one past the queue limit; its head, its
// depth, and the person's place in line.

package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// queueBehind puts step s's message in the queue, behind the run, and
// reports a kick when the user must be looked at again.
func (d *Dispatcher) queueBehind(ctx context.Context, s *step) (kick bool, err error) {
	queued, err := d.enqueue(ctx, s.log, s.u, s.in)
	if !queued || err != nil {
		return false, err
	}
	// Write the state again at the revision this decision was made on. If
	// that fails, the user moved meanwhile — maybe a run ended without
	// seeing this message — so look again.
	s.now.Queued = s.in.ID
	if _, err = d.save(ctx, s.u, s.now, s.rev); conflict(err) {
		return true, nil
	}
	return false, err
}

// enqueue stores a message behind the user's current run and tells them;
// the stream refuses it when the queue is full.
func (d *Dispatcher) enqueue(ctx context.Context, log zerolog.Logger, u contract.User, in *contract.Inbound) (bool, error) {
	if in == nil {
		return false, errors.New("enqueue: no message")
	}
	data, err := contract.Encode(in)
	if err != nil {
		return false, err
	}
	ack, err := bus.Publish(ctx, d.js, contract.QueueSubject(u), data, contract.MsgID(u, in.ID))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == errMaxMsgsPerSubject {
		log.Info().Msg("queue full")
		return false, d.notice(ctx, u, in.ID, "queue", fsm.MsgQueueFull)
	}
	if err != nil {
		return false, fmt.Errorf("enqueue: %w", err)
	}
	if !ack.Duplicate {
		log.Info().Uint64("queue_seq", ack.Sequence).Msg("queued")
	}
	return true, d.notice(ctx, u, in.ID, "queue", queuedText(d.queueDepth(ctx, u)))
}

// queuedText tells a message's place in the queue: the first waiting
// runs next, the others are 2nd, 3rd… in line.
func queuedText(place uint64) string {
	if place <= 1 {
		return fsm.MsgQueued
	}
	return fmt.Sprintf(fsm.MsgQueuedPlace, ordinal(place))
}

// ordinal writes 2 as "2nd", 11 as "11th", 23 as "23rd".
func ordinal(n uint64) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprint(n) + suffix
}

// errMaxMsgsPerSubject is the server's answer to a publish past a subject's
// MaxMsgsPerSubject with DiscardNewPerSubject: the queue is full.
const errMaxMsgsPerSubject jetstream.ErrorCode = 10077

func (d *Dispatcher) queueDepth(ctx context.Context, u contract.User) uint64 {
	subj := contract.QueueSubject(u)
	info, err := d.queue.Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		return 0
	}
	return info.State.Subjects[subj]
}

// queued is a message in the user's queue.
type queued struct {
	in    contract.Inbound
	seq   uint64
	trace string // its trace id, from its header
}

// traced is ctx for publishing about job: with the queued message's trace
// when job is that message (it is starting), else ctx as it is.
func (q *queued) traced(ctx context.Context, job string) context.Context {
	if q == nil || q.in.ID != job {
		return ctx
	}
	return contract.WithTrace(ctx, q.trace)
}

// head is the oldest waiting message of u, or nil. A message that already
// ran (one that ended, or the current job when it is ending) is removed
// on the way: a crash between publishing its job and dequeuing it left it
// there, and starting it again would wait forever for a run JetStream
// deduplicates. With keepCurrent the current job stays: its start is being
// repeated, and a crash between storing the state and publishing the job
// left its only copy in the queue.
func (d *Dispatcher) head(ctx context.Context, u contract.User, st contract.UserState, keepCurrent bool) (*queued, error) {
	for {
		raw, err := d.queue.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(contract.QueueSubject(u)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("queue head: %w", err)
		}
		var in contract.Inbound
		err = contract.Decode(raw.Data, &in)
		trace := bus.Trace(raw.Header)
		log := bus.TraceLog(d.log, trace)
		switch {
		case err != nil:
			// A message nobody can read must not block the queue forever.
			log.Error().Err(err).Str("user", u.Key()).Uint64("seq", raw.Sequence).Msg("dropping unreadable queued message")
		case (in.ID == st.JobID && !keepCurrent) || slices.Contains(st.Finished, in.ID):
			log.Info().Str("user", u.Key()).Str("job_id", in.ID).Msg("dropping a queued message that already started")
		default:
			return &queued{in: in, seq: raw.Sequence, trace: trace}, nil
		}
		if err := d.dequeue(ctx, log.With().Str("user", u.Key()).Logger(), raw.Sequence); err != nil {
			return nil, err
		}
	}
}

// dequeue removes the queued message at seq; one already gone counts as
// removed.
//
// Two steps of one person's may both remove the same head, and the second
// finds it gone: a start repeated while the first is between publishing its
// job and dequeuing (fsm's restart, on a done of an earlier job: the done
// consumer and an inbound message's catchUp take in the same done, or a
// done redelivered), or head dropping a started message as its start
// dequeues it. Sequences are never reused, so gone is done: the job is
// published once (deduplicated by its id) and nothing else is lost.
//
// The server answers such a delete with 10043 "sequence N not found" (10057
// "no message found" at the stream's first), which nats.go hands back as
// ErrMsgDeleteUnsuccessful with that answer as text only: errors.Is(err,
// jetstream.ErrMsgNotFound) never matches it. So a failed delete looks the
// message up; ErrMsgNotFound (10037) there means the other step removed it.
// Returning the error instead had the handler tried again in place (Consume),
// holding up the people behind it in its worker, to find the same.
func (d *Dispatcher) dequeue(ctx context.Context, log zerolog.Logger, seq uint64) error {
	err := d.queue.DeleteMsg(ctx, seq)
	if err == nil {
		return nil
	}
	if errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) || errors.Is(err, jetstream.ErrMsgNotFound) {
		if _, gerr := d.queue.GetMsg(ctx, seq); errors.Is(gerr, jetstream.ErrMsgNotFound) {
			log.Debug().Uint64("queue_seq", seq).Err(err).Msg("dequeued already")
			return nil
		}
	}
	return fmt.Errorf("dequeue: %w", err)
}
