package dispatcher_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// takeUnacked takes the next message of the dispatcher's consumer as a
// dispatcher does, and never acknowledges it: a dispatcher killed while
// the message was in hand. The test's client is then unpinned, as the
// pin's TTL would after the dead one stopped pulling, so a dispatcher
// started next takes over at once.
func (h *harness) takeUnacked(wantSeq uint64) jetstream.Msg {
	h.t.Helper()
	ctx := h.t.Context()
	cons, err := h.js.Consumer(ctx, contract.StreamIn, contract.ConsumerDispatcher)
	if err != nil {
		h.t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchPriorityGroup(contract.PriorityGroup), jetstream.FetchMaxWait(wait))
	if err != nil {
		h.t.Fatalf("fetch: %v", err)
	}
	var got []jetstream.Msg
	for m := range batch.Messages() {
		got = append(got, m)
	}
	if batch.Error() != nil || len(got) != 1 {
		h.t.Fatalf("fetch: got %d messages (%v); want 1", len(got), batch.Error())
	}
	if md, err := got[0].Metadata(); err != nil || md.Sequence.Stream != wantSeq {
		h.t.Fatalf("fetched %+v (%v); want IN sequence %d", md, err, wantSeq)
	}
	in, err := h.js.Stream(ctx, contract.StreamIn)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := in.UnpinConsumer(ctx, contract.ConsumerDispatcher, contract.PriorityGroup); err != nil {
		h.t.Fatalf("unpin: %v", err)
	}
	return got[0]
}

// inboundUnacked waits until the dispatcher's consumer has delivered every
// message and n of them are not acknowledged.
func (h *harness) inboundUnacked(n int) {
	h.t.Helper()
	natstest.CheckFor(h.t, wait, poll, func() error {
		c, err := h.js.Consumer(h.t.Context(), contract.StreamIn, contract.ConsumerDispatcher)
		if err != nil {
			return err
		}
		info, err := c.Info(h.t.Context())
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != n {
			return fmt.Errorf("%d messages not delivered, %d not acknowledged; want none, %d", info.NumPending, info.NumAckPending, n)
		}
		return nil
	})
}

// A dispatcher killed with m3 in hand, unacknowledged: m3 stays pending
// until its ack wait ends, and the person's next message, m4, reaches the
// restarted dispatcher first. m3 must still be routed first, and its late
// redelivery must route nothing again.
func TestCrashedMessageRoutesBeforeTheNext(t *testing.T) {
	tests := []struct {
		name string
		m3   string
		// left is what the killed dispatcher left of the person, m3 being
		// at IN sequence seq3.
		left func(h *harness, u contract.User, seq3 uint64)
		// jobs, queue and state after m4 and after m3's redelivery.
		jobs, queue []string
		state, job  string
	}{
		{"m3 not routed", "third", func(*harness, contract.User, uint64) {},
			[]string{"m3"}, []string{"m4"}, contract.StateWorking, "m3"},
		{"m3 a cancel, a record from before InSeq", "cancel", func(h *harness, u contract.User, _ uint64) {
			h.setState(u, func(st *contract.UserState) {
				*st = contract.UserState{State: contract.StateWorking, JobID: "m2", Since: time.Now().UTC()}
			})
		}, []string{"m4"}, nil, contract.StateWorking, "m4"},
		{"m3 stored as running, its job not published", "third", func(h *harness, u contract.User, seq3 uint64) {
			h.setState(u, func(st *contract.UserState) {
				*st = contract.UserState{State: contract.StateWorking, JobID: "m3", Since: time.Now().UTC(), InSeq: seq3}
			})
		}, []string{"m3"}, []string{"m4"}, contract.StateWorking, "m3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := provisioned(t)
			u := user(t, "alice")
			seq3 := h.send(u, "m3", tt.m3)
			m3 := h.takeUnacked(seq3)
			tt.left(h, u, seq3)

			h.run(1)
			h.send(u, "m4", "fourth")
			h.inboundUnacked(1) // m4 taken in; m3's first delivery still out
			h.routed(u, tt.jobs, tt.queue, tt.state, tt.job)
			transitions, notices := h.transitions(u), h.notices(u)

			// m3's delivery to the dead dispatcher ends (its ack wait),
			// and it comes again.
			if err := m3.Nak(); err != nil {
				t.Fatal(err)
			}
			h.inboundUnacked(0)
			h.routed(u, tt.jobs, tt.queue, tt.state, tt.job)
			if got := h.transitions(u); !slices.Equal(got, transitions) {
				t.Errorf("after m3's redelivery state events: got %q; want %q", got, transitions)
			}
			if got := h.notices(u); !slices.Equal(got, notices) {
				t.Errorf("after m3's redelivery notices: got %q; want %q", got, notices)
			}
		})
	}
}

// routed waits until u's jobs, queue and state are these.
func (h *harness) routed(u contract.User, jobs, queue []string, state, job string) {
	h.t.Helper()
	natstest.CheckFor(h.t, wait, poll, func() error {
		st, _ := h.state(u)
		if got := jobIDs(h.jobs(u)); !slices.Equal(got, jobs) {
			return fmt.Errorf("jobs: got %q; want %q (queue %q, state %s %s)", got, jobs, h.queued(u), st.State, st.JobID)
		}
		if got := h.queued(u); !slices.Equal(got, queue) {
			return fmt.Errorf("queue: got %q; want %q", got, queue)
		}
		if st.State != state || st.JobID != job {
			return fmt.Errorf("state: got %s %s; want %s %s", st.State, st.JobID, state, job)
		}
		return nil
	})
}
