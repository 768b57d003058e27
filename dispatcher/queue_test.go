package dispatcher_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/natstest"
)

// racedJS is the test's JetStream as a dispatcher sees it, but that each
// delete of a queued message comes second: just before the dispatcher
// deletes it, another step of the person's (here the test, on the same
// server) deletes it first. Two steps dequeuing one head, in the order
// that leaves the dispatcher's delete finding nothing, every time.
type racedJS struct {
	jetstream.JetStream
	raced atomic.Int32 // deletes that came second
}

func (r *racedJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := r.JetStream.Stream(ctx, name)
	if err != nil || name != contract.StreamQueue {
		return s, err
	}
	return &racedQueue{Stream: s, r: r}, nil
}

type racedQueue struct {
	jetstream.Stream
	r *racedJS
}

func (q *racedQueue) DeleteMsg(ctx context.Context, seq uint64) error {
	if err := q.Stream.DeleteMsg(ctx, seq); err == nil { // the other step's
		q.r.raced.Add(1)
	}
	return q.Stream.DeleteMsg(ctx, seq)
}

// runRaced runs one dispatcher on racedJS, logging everything into logs.
func (h *harness) runRaced() (*racedJS, *natstest.Logs) {
	t := h.t
	t.Helper()
	r, logs := &racedJS{JetStream: h.js}, &natstest.Logs{}
	d, err := dispatcher.New(dispatcher.Config{}, r, zerolog.New(logs))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return 30s after its context ended")
		}
	})
	return r, logs
}

// retriedInPlace counts the handlers Consume tried again in place.
func retriedInPlace(t *testing.T, logs *natstest.Logs) int {
	return len(logs.Find(t, "message failed; trying it again in place", nil))
}

// When a run ends whose message a crash left at the queue's head
// (TestStartedMessageLeftInQueue), head drops it; if another step removed
// it meanwhile, the delete finds nothing, and that is the drop done: the
// done is taken in at once, not tried again in place.
func TestDequeueOfAHeadAlreadyRemovedIsDone(t *testing.T) {
	h := provisioned(t)
	u := user(t, "alice")
	// What the crashed dispatcher left: m2 started, still queued.
	data, err := contract.Encode(&contract.Inbound{ID: "m2", User: u, Text: "second", At: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Publish(t.Context(), h.js, contract.QueueSubject(u), data, contract.MsgID(u, "m2")); err != nil {
		t.Fatal(err)
	}
	h.setState(u, func(st *contract.UserState) {
		*st = contract.UserState{State: contract.StateWorking, JobID: "m2", Finished: []string{"m1"}, Since: time.Now().UTC()}
	})
	r, logs := h.runRaced()

	h.doneHandled(h.done(u, "m2"))
	h.waitState(u, contract.StateIdle, "")
	if got := h.queued(u); len(got) != 0 {
		t.Errorf("queue %q; want empty", got)
	}
	if n := r.raced.Load(); n != 1 {
		t.Fatalf("%d deletes came second; want 1 (the test raced nothing)", n)
	}
	if n := retriedInPlace(t, logs); n != 0 {
		t.Errorf("%d handlers tried again in place; want none: a message already dequeued is dequeued", n)
	}
	if n := len(logs.Find(t, "dequeued already", map[string]string{"user": u.Key()})); n != 1 {
		t.Errorf("%d %q lines; want 1", n, "dequeued already")
	}
}

// The "dequeue: … sequence N not found" of 64 people writing at once: a
// queued message's start is repeated (fsm's restart, on a done of the job
// before it: the done consumer and an inbound message's catchUp take in
// the same done) while the first start has published the job and not yet
// dequeued it. Both dequeue the head; the second finds it gone. Nothing is
// doubled (one job, deduplicated by its id), lost (the next message waits
// and runs) or stuck (IN and QUEUE end empty).
func TestRepeatedStartDequeuingARemovedHead(t *testing.T) {
	h := provisioned(t)
	r, logs := h.runRaced()
	u := user(t, "alice")
	h.inboundHandled(h.send(u, "m1", "first"))
	h.send(u, "m2", "second")
	h.inboundHandled(h.send(u, "m3", "third"))
	// The first start of m2, between its job's publish and its dequeue.
	h.setState(u, func(st *contract.UserState) {
		st.JobID, st.Finished = "m2", append(st.Finished, "m1")
	})
	job, err := contract.Encode(&contract.Job{ID: "m2", User: u, Text: "second", At: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Publish(t.Context(), h.js, contract.JobSubject(u), job, contract.MsgID(u, "m2", "job")); err != nil {
		t.Fatal(err)
	}

	// m1's done again: m2's start is repeated from the queue.
	h.doneHandled(h.done(u, "m1"))
	h.routed(u, []string{"m1", "m2"}, []string{"m3"}, contract.StateWorking, "m2")
	if n := r.raced.Load(); n != 1 {
		t.Fatalf("%d deletes came second; want 1 (the test raced nothing)", n)
	}

	// The rest runs as ever.
	h.doneHandled(h.done(u, "m2"))
	h.routed(u, []string{"m1", "m2", "m3"}, nil, contract.StateWorking, "m3")
	h.doneHandled(h.done(u, "m3"))
	h.routed(u, []string{"m1", "m2", "m3"}, nil, contract.StateIdle, "")
	natstest.CheckFor(t, wait, poll, func() error {
		for _, name := range []string{contract.StreamIn, contract.StreamQueue} {
			s, err := h.js.Stream(t.Context(), name)
			if err != nil {
				return err
			}
			info, err := s.Info(t.Context())
			if err != nil {
				return err
			}
			if info.State.Msgs != 0 {
				return fmt.Errorf("stream %s holds %d messages", name, info.State.Msgs)
			}
		}
		return nil
	})
	t.Logf("deletes that came second: %d; handlers tried again in place: %d", r.raced.Load(), retriedInPlace(t, logs))
}
