package dispatcher_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/natstest"
)

// unreadable is an inbound payload nobody can decode.
const unreadable = "\x00not json"

// A dispatcher killed with a person's messages in hand: their next message
// reaches the dispatcher that takes over first, and routes those still in
// IN before itself (routeEarlier). Whatever the earlier ones are, every
// message ends acknowledged (IN empty), each is routed once, and their
// late redeliveries change nothing.
func TestEarlierMessagesInHandEndAcknowledged(t *testing.T) {
	tests := []struct {
		name string
		// earlier are the texts of m1, m2…, each taken in hand by the
		// dead dispatcher (unreadable: a payload nobody can decode); last
		// is the text of the message that comes next, "next".
		earlier []string
		last    string
		// left is what else the dead dispatcher left, the earlier
		// messages being at IN sequences seqs.
		left func(h *harness, u contract.User, seqs []uint64)
		// jobs, queue and state once next is routed, and after the
		// earlier ones' redeliveries.
		jobs, queue []string
		state, job  string
	}{
		{
			name: "the next one empty, which moves no InSeq", earlier: []string{"first"}, last: "",
			jobs: []string{"m1"}, state: contract.StateWorking, job: "m1",
		},
		{
			name: "routed early after its run ended", earlier: []string{"first"}, last: "second",
			left: func(h *harness, u contract.User, seqs []uint64) {
				h.setState(u, func(st *contract.UserState) {
					*st = contract.UserState{State: contract.StateIdle, Finished: []string{"m1"}, InSeq: seqs[0], Since: time.Now().UTC()}
				})
			},
			jobs: []string{"next"}, state: contract.StateWorking, job: "next",
		},
		{
			name: "unreadable", earlier: []string{unreadable}, last: "second",
			jobs: []string{"next"}, state: contract.StateWorking, job: "next",
		},
		{
			name: "two in hand", earlier: []string{"first", "second"}, last: "third",
			jobs: []string{"m1"}, queue: []string{"m2", "next"}, state: contract.StateWorking, job: "m1",
		},
		{
			// The person's projects were written by a newer contract: a
			// use can never be routed (bus.IsPermanent), and its own
			// delivery terminates it; the message after it is routed.
			name: "one that can never be routed", earlier: []string{"use web"}, last: "hello",
			left: func(h *harness, u contract.User, _ []uint64) {
				kv, err := h.js.KeyValue(h.t.Context(), contract.BucketProjects)
				if err != nil {
					h.t.Fatal(err)
				}
				if _, err := kv.Put(h.t.Context(), u.Key(), []byte(fmt.Sprintf(`{"v":%d}`, contract.Version+1))); err != nil {
					h.t.Fatal(err)
				}
			},
			jobs: []string{"next"}, state: contract.StateWorking, job: "next",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := provisioned(t)
			u := user(t, "alice")
			var seqs []uint64
			var inHand []jetstream.Msg
			for i, text := range tt.earlier {
				var seq uint64
				if text == unreadable {
					ack, err := h.js.Publish(t.Context(), contract.InboundSubject(u), []byte(text))
					if err != nil {
						t.Fatal(err)
					}
					seq = ack.Sequence
				} else {
					seq = h.send(u, fmt.Sprint("m", i+1), text)
				}
				seqs = append(seqs, seq)
				inHand = append(inHand, h.takeUnacked(seq))
			}
			if tt.left != nil {
				tt.left(h, u, seqs)
			}

			h.run(1)
			h.send(u, "next", tt.last)
			h.inboundUnacked(len(inHand)) // next taken in; the earlier ones still out
			h.routed(u, tt.jobs, tt.queue, tt.state, tt.job)
			transitions, notices := h.transitions(u), h.notices(u)

			// Their deliveries to the dead dispatcher end, and they come again.
			for _, m := range inHand {
				if err := m.Nak(); err != nil {
					t.Fatal(err)
				}
			}
			h.inboundUnacked(0)
			h.inEmpty()
			h.routed(u, tt.jobs, tt.queue, tt.state, tt.job)
			if got := h.transitions(u); !slices.Equal(got, transitions) {
				t.Errorf("after the redeliveries state events: got %q; want %q", got, transitions)
			}
			if got := h.notices(u); !slices.Equal(got, notices) {
				t.Errorf("after the redeliveries notices: got %q; want %q", got, notices)
			}
		})
	}
}

// The dispatcher that routed m1 early stops, and m1's redelivery reaches
// another one, which knows nothing of what the first routed: it finds no
// message before m1, and the state's InSeq (m2's) drops it, acknowledged.
func TestEarlierMessageRedeliveredToAnotherDispatcher(t *testing.T) {
	h := provisioned(t)
	u := user(t, "alice")
	m1 := h.takeUnacked(h.send(u, "m1", "first"))

	stop := h.runStoppable()
	h.send(u, "m2", "second")
	h.inboundUnacked(1)
	h.routed(u, []string{"m1"}, []string{"m2"}, contract.StateWorking, "m1")
	stop()

	h.run(1)
	transitions, notices := h.transitions(u), h.notices(u)
	if err := m1.Nak(); err != nil {
		t.Fatal(err)
	}
	h.inboundUnacked(0)
	h.inEmpty()
	h.routed(u, []string{"m1"}, []string{"m2"}, contract.StateWorking, "m1")
	if got := h.transitions(u); !slices.Equal(got, transitions) {
		t.Errorf("after m1's redelivery state events: got %q; want %q", got, transitions)
	}
	if got := h.notices(u); !slices.Equal(got, notices) {
		t.Errorf("after m1's redelivery notices: got %q; want %q", got, notices)
	}
}

// runStoppable runs one dispatcher until stop, which waits for its Run to
// return.
func (h *harness) runStoppable() (stop func()) {
	t := h.t
	t.Helper()
	d, err := dispatcher.New(dispatcher.Config{}, h.js, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Run did not return 30s after its context ended")
		}
	}
	t.Cleanup(stop)
	return stop
}

// inEmpty waits until IN holds nothing: every message acknowledged or
// terminated.
func (h *harness) inEmpty() {
	h.t.Helper()
	natstest.CheckFor(h.t, wait, poll, func() error {
		s, err := h.js.Stream(h.t.Context(), contract.StreamIn)
		if err != nil {
			return err
		}
		info, err := s.Info(h.t.Context())
		if err != nil {
			return err
		}
		if info.State.Msgs != 0 {
			return fmt.Errorf("stream %s holds %d messages", contract.StreamIn, info.State.Msgs)
		}
		return nil
	})
}
