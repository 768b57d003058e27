package egress_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/textslash/textslash/channels/twilio"

	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/twiliotest"
)

// publishTraced puts an event on EVENTS with a trace, as the dispatcher or
// runner would under a message's trace, and returns the trace.
func (h *harness) publishTraced(ev contract.Event) string {
	h.t.Helper()
	trace := contract.NewTrace("")
	if err := bus.PublishEvent(contract.WithTrace(h.t.Context(), trace), h.js, ev, contract.MsgID(ev.User, ev.JobID, string(ev.Kind))); err != nil {
		h.t.Fatal(err)
	}
	return trace
}

// Egress logs each event's trace on its lines: sends, a progress held
// back and sent later, retries, and a dead letter, which carries the
// trace on too.
func TestEgressLogsTrace(t *testing.T) {
	h, cfg := prepare(t, twilio.Config{WhatsApp: channel.Rules{ProgressEvery: 300 * time.Millisecond}})
	var logs natstest.Logs
	h.logs = &logs
	h.run(cfg)
	// wantLines waits for n lines msg about job with trace.
	wantLines := func(msg, job, trace string, n int) {
		t.Helper()
		natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
			if got := len(logs.Find(t, msg, map[string]string{"job_id": job, contract.LogTrace: trace})); got != n {
				return fmt.Errorf("%d lines %q about %s with its trace; want %d", got, msg, job, n)
			}
			return nil
		})
	}

	step1 := h.publishTraced(contract.Event{Kind: contract.KindProgress, User: alice, JobID: "p1", Text: "step 1"})
	step2 := h.publishTraced(contract.Event{Kind: contract.KindProgress, User: alice, JobID: "p2", Text: "step 2"})
	h.api.WaitMessages(t, 2, 5*time.Second)
	wantLines("sent", "p1", step1, 1)
	wantLines("sent", "p2", step2, 1) // held back, then sent by the timer

	h.api.FailNext(1, 429, 20429)
	reply := h.publishTraced(contract.Event{Kind: contract.KindDone, User: alice, JobID: "m1", Text: "hi", Status: contract.StatusOK})
	h.api.WaitMessages(t, 3, 5*time.Second)
	wantLines("send failed; will retry", "m1", reply, 1)
	wantLines("sent", "m1", reply, 1)

	h.api.FailTo("+15551230002", 400, twiliotest.CodeOutsideWindow)
	notice := h.publishTraced(contract.Event{Kind: contract.KindNotice, User: bob, JobID: "m2", Text: "Got it"})
	wantLines("message not delivered; dead letter published", "m2", notice, 1)
	natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		s, err := h.js.Stream(t.Context(), contract.StreamEvents)
		if err != nil {
			return err
		}
		m, err := s.GetLastMsgForSubject(t.Context(), contract.EventSubject(bob, contract.KindUndelivered))
		if err != nil {
			return err
		}
		if got := bus.Trace(m.Header); got != notice {
			t.Fatalf("dead letter: trace %q; want its event's %q", got, notice)
		}
		return nil
	})
}
