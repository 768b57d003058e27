// Package dispatcher keeps each user's state (idle, working,
// awaiting_approval) and queue. It decides which message runs next and
// publishes it as a job; it never runs anything itself.
//
// State lives in the users KV bucket and changes only by compare-and-set on
// the entry's revision, so any number of dispatchers may run at once and any
// of them may be killed at any moment. Waiting messages live in the QUEUE
// stream, whose per-subject limit is the queue limit.
package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
)

// Replies of the dispatcher's own, from the seeds.
const (
	MsgEmpty     = "I received an empty message."
	MsgQueued    = "Got it, I'll process this next."
	MsgQueueFull = "Queue full, please wait for current tasks to finish."
)

// Config of the dispatcher. It has no settings yet; limits are in the
// stream configuration (contract.QueueLimit).
type Config struct{}

// Dispatcher routes inbound messages and starts queued ones.
type Dispatcher struct {
	js    jetstream.JetStream
	log   zerolog.Logger
	users jetstream.KeyValue
	queue jetstream.Stream
}

// New returns a dispatcher using js.
func New(_ Config, js jetstream.JetStream, log zerolog.Logger) (*Dispatcher, error) {
	if js == nil {
		return nil, errors.New("dispatcher: no JetStream")
	}
	return &Dispatcher{js: js, log: log.With().Str("svc", "dispatcher").Logger()}, nil
}

// Run consumes inbound messages and done events until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	var err error
	if d.users, err = d.js.KeyValue(ctx, contract.BucketUsers); err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketUsers, err)
	}
	if d.queue, err = d.js.Stream(ctx, contract.StreamQueue); err != nil {
		return fmt.Errorf("stream %s: %w", contract.StreamQueue, err)
	}
	in, err := d.js.Consumer(ctx, contract.StreamIn, contract.ConsumerDispatcher)
	if err != nil {
		return fmt.Errorf("consumer %s: %w", contract.ConsumerDispatcher, err)
	}
	done, err := d.js.Consumer(ctx, contract.StreamEvents, contract.ConsumerDispatcherDone)
	if err != nil {
		return fmt.Errorf("consumer %s: %w", contract.ConsumerDispatcherDone, err)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return contract.Consume(ctx, d.js, in, d.handleInbound, d.log) })
	g.Go(func() error { return contract.Consume(ctx, d.js, done, d.handleDone, d.log) })
	return g.Wait()
}

// handleInbound routes one message a person sent.
func (d *Dispatcher) handleInbound(ctx context.Context, msg jetstream.Msg) error {
	var in contract.Inbound
	if err := contract.Decode(msg.Data(), &in); err != nil {
		return err
	}
	if err := in.User.Validate(); err != nil {
		return err
	}
	u := in.User
	log := zerolog.Ctx(ctx).With().Str("user", u.Key()).Str("job_id", in.ID).Logger()
	if strings.TrimSpace(in.Text) == "" && len(in.Media) == 0 {
		return d.notice(ctx, u, in.ID, MsgEmpty)
	}
	for {
		st, rev, err := d.load(ctx, u)
		if err != nil {
			return err
		}
		if slices.Contains(st.Finished, in.ID) {
			// Redelivered after its run ended (its acknowledgement was lost).
			log.Info().Msg("message already ran; dropping the redelivery")
			return nil
		}
		if st.State != contract.StateIdle {
			if st.JobID == in.ID {
				// Redelivered after a crash between starting the job and
				// acknowledging the message: make sure the job exists.
				return d.publishJob(ctx, u, in)
			}
			return d.enqueue(ctx, log, in)
		}
		// Idle, but earlier messages still waiting (their start was cut
		// short): this one goes behind them.
		if _, _, ok, err := d.head(ctx, u); err != nil {
			return err
		} else if ok {
			return d.enqueue(ctx, log, in)
		}
		next := contract.UserState{State: contract.StateWorking, JobID: in.ID, Since: time.Now().UTC(), Finished: st.Finished}
		if err := d.save(ctx, u, next, rev); errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue // another dispatcher changed this user: look again
		} else if err != nil {
			return err
		}
		log.Info().Msg("job started")
		if err := d.publishJob(ctx, u, in); err != nil {
			return err
		}
		return d.stateEvent(ctx, u, in.ID, st.State, next.State)
	}
}

// enqueue stores a message behind the user's current run and tells them.
func (d *Dispatcher) enqueue(ctx context.Context, log zerolog.Logger, in contract.Inbound) error {
	u := in.User
	data, err := contract.Encode(&in)
	if err != nil {
		return err
	}
	ack, err := d.js.Publish(ctx, contract.QueueSubject(u), data, jetstream.WithMsgID(contract.MsgID(u, in.ID)))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == errMaxMsgsPerSubject {
		log.Info().Msg("queue full")
		return d.notice(ctx, u, in.ID, MsgQueueFull)
	}
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	if !ack.Duplicate {
		log.Info().Uint64("queue_seq", ack.Sequence).Msg("queued")
		if err := d.notice(ctx, u, in.ID, MsgQueued); err != nil {
			return err
		}
	}
	// The run may have ended while this was being queued; if so nobody else
	// will start it.
	return d.advance(ctx, u, "")
}

// errMaxMsgsPerSubject is the server's answer to a publish past a subject's
// MaxMsgsPerSubject with DiscardNewPerSubject: the queue is full.
const errMaxMsgsPerSubject jetstream.ErrorCode = 10077

// handleDone starts the user's next message, or makes them idle, when a run
// ends.
func (d *Dispatcher) handleDone(ctx context.Context, msg jetstream.Msg) error {
	var ev contract.Event
	if err := contract.Decode(msg.Data(), &ev); err != nil {
		return err
	}
	if err := ev.User.Validate(); err != nil {
		return err
	}
	return d.advance(ctx, ev.User, ev.JobID)
}

// advance moves a user whose run `finished` ended (or, with "", a user who
// may be idle with messages waiting) to their next message or to idle.
func (d *Dispatcher) advance(ctx context.Context, u contract.User, finished string) error {
	for {
		st, rev, err := d.load(ctx, u)
		if err != nil {
			return err
		}
		switch {
		case st.State == contract.StateWorking && st.JobID == finished && finished != "":
		case st.State == contract.StateIdle:
		default:
			return nil // a run is going (or awaiting approval): its end will advance
		}
		done := st.Finished
		if st.State == contract.StateWorking {
			done = appendFinished(done, finished)
		}
		// Skip a head that already ran or runs: its start was cut short
		// before it could be removed from the queue.
		var head contract.Inbound
		var seq uint64
		var ok bool
		for {
			head, seq, ok, err = d.head(ctx, u)
			if err != nil {
				return err
			}
			if !ok || (head.ID != st.JobID && !slices.Contains(done, head.ID)) {
				break
			}
			if err := d.queue.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				return fmt.Errorf("dequeue: %w", err)
			}
		}
		next := contract.UserState{State: contract.StateIdle, Since: time.Now().UTC(), Finished: done}
		if ok {
			next.State, next.JobID = contract.StateWorking, head.ID
		} else if st.State == contract.StateIdle {
			return nil
		}
		if err := d.save(ctx, u, next, rev); errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		} else if err != nil {
			return err
		}
		log := d.log.With().Str("user", u.Key()).Logger()
		if ok {
			log.Info().Str("job_id", head.ID).Msg("job started from queue")
			if err := d.publishJob(ctx, u, head); err != nil {
				return err
			}
			if err := d.queue.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				return fmt.Errorf("dequeue: %w", err)
			}
			return d.stateEvent(ctx, u, head.ID, st.State, next.State)
		}
		log.Info().Str("job_id", finished).Msg("idle")
		return d.stateEvent(ctx, u, finished, st.State, next.State)
	}
}

// appendFinished remembers a finished job id, keeping the newest
// contract.FinishedKept.
func appendFinished(ids []string, id string) []string {
	ids = append(slices.Clone(ids), id)
	if n := len(ids) - contract.FinishedKept; n > 0 {
		ids = ids[n:]
	}
	return ids
}

// head is the oldest waiting message of u.
func (d *Dispatcher) head(ctx context.Context, u contract.User) (contract.Inbound, uint64, bool, error) {
	var in contract.Inbound
	raw, err := d.queue.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(contract.QueueSubject(u)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return in, 0, false, nil
	}
	if err != nil {
		return in, 0, false, fmt.Errorf("queue head: %w", err)
	}
	if err := contract.Decode(raw.Data, &in); err != nil {
		// A message nobody can read must not block the queue forever.
		d.log.Error().Err(err).Str("user", u.Key()).Uint64("seq", raw.Sequence).Msg("dropping unreadable queued message")
		if err := d.queue.DeleteMsg(ctx, raw.Sequence); err != nil {
			return in, 0, false, fmt.Errorf("dequeue: %w", err)
		}
		return d.head(ctx, u)
	}
	return in, raw.Sequence, true, nil
}

// load reads a user's state; a user never seen is idle at revision 0.
func (d *Dispatcher) load(ctx context.Context, u contract.User) (contract.UserState, uint64, error) {
	e, err := d.users.Get(ctx, u.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return contract.UserState{State: contract.StateIdle}, 0, nil
	}
	if err != nil {
		return contract.UserState{}, 0, fmt.Errorf("load state: %w", err)
	}
	var st contract.UserState
	if err := contract.Decode(e.Value(), &st); err != nil {
		return contract.UserState{}, 0, fmt.Errorf("state of %s: %w", u.Key(), err)
	}
	return st, e.Revision(), nil
}

// save writes a user's state if it is still at revision rev.
func (d *Dispatcher) save(ctx context.Context, u contract.User, st contract.UserState, rev uint64) error {
	data, err := contract.Encode(&st)
	if err != nil {
		return err
	}
	if rev == 0 {
		_, err = d.users.Create(ctx, u.Key(), data)
	} else {
		_, err = d.users.Update(ctx, u.Key(), data, rev)
	}
	return err
}

func (d *Dispatcher) publishJob(ctx context.Context, u contract.User, in contract.Inbound) error {
	job := contract.Job{ID: in.ID, User: u, Text: in.Text, Media: in.Media, At: in.At}
	data, err := contract.Encode(&job)
	if err != nil {
		return err
	}
	if _, err := d.js.Publish(ctx, contract.JobSubject(u), data, jetstream.WithMsgID(contract.MsgID(u, in.ID, "job"))); err != nil {
		return fmt.Errorf("publish job: %w", err)
	}
	return nil
}

func (d *Dispatcher) notice(ctx context.Context, u contract.User, jobID, text string) error {
	return contract.PublishEvent(ctx, d.js, contract.Event{Kind: contract.KindNotice, User: u, JobID: jobID, Text: text},
		contract.MsgID(u, jobID, "notice"))
}

func (d *Dispatcher) stateEvent(ctx context.Context, u contract.User, jobID, from, to string) error {
	return contract.PublishEvent(ctx, d.js, contract.Event{Kind: contract.KindState, User: u, JobID: jobID, From: from, To: to},
		contract.MsgID(u, jobID, "state", to))
}
