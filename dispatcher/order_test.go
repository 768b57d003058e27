package dispatcher_test

import (
	"fmt"
	"slices"
	"testing"

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

// A dispatcher killed with m3 in hand, unacknowledged: m3 stays pending
// until its ack wait ends, and the person's next message, m4, reaches the
// restarted dispatcher first. m3 must still be routed first (it runs, m4
// waits behind it), and its late redelivery must route nothing again.
func TestCrashedMessageRoutesBeforeTheNext(t *testing.T) {
	h := provisioned(t)
	u := user(t, "alice")
	m3 := h.takeUnacked(h.send(u, "m3", "third"))

	h.run(1)
	s4 := h.send(u, "m4", "fourth")
	natstest.CheckFor(t, wait, poll, func() error {
		if got, want := jobIDs(h.jobs(u)), []string{"m3"}; !slices.Equal(got, want) {
			return fmt.Errorf("jobs: got %q; want %q (queue %q)", got, want, h.queued(u))
		}
		if got, want := h.queued(u), []string{"m4"}; !slices.Equal(got, want) {
			return fmt.Errorf("queue: got %q; want %q", got, want)
		}
		return nil
	})
	h.inboundHandled(s4)
	transitions := h.transitions(u)
	notices := h.notices(u)

	// m3's delivery to the dead dispatcher ends (its ack wait), and it
	// comes again.
	if err := m3.Nak(); err != nil {
		t.Fatal(err)
	}
	natstest.CheckFor(t, wait, poll, func() error {
		c, err := h.js.Consumer(t.Context(), contract.StreamIn, contract.ConsumerDispatcher)
		if err != nil {
			return err
		}
		info, err := c.Info(t.Context())
		if err != nil {
			return err
		}
		if info.NumAckPending != 0 || info.NumPending != 0 {
			return fmt.Errorf("%d messages pending, %d unacknowledged; want none", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	if got, want := jobIDs(h.jobs(u)), []string{"m3"}; !slices.Equal(got, want) {
		t.Errorf("after m3's redelivery jobs: got %q; want %q", got, want)
	}
	if got, want := h.queued(u), []string{"m4"}; !slices.Equal(got, want) {
		t.Errorf("after m3's redelivery queue: got %q; want %q", got, want)
	}
	if got := h.transitions(u); !slices.Equal(got, transitions) {
		t.Errorf("after m3's redelivery state events: got %q; want %q", got, transitions)
	}
	if got := h.notices(u); !slices.Equal(got, notices) {
		t.Errorf("after m3's redelivery notices: got %q; want %q", got, notices)
	}

	h.doneHandled(h.done(u, "m3"))
	h.waitJobs(u, "m3", "m4")
	h.waitState(u, contract.StateWorking, "m4")
}
