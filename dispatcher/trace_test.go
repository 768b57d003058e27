package dispatcher_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/natstest"
)

// jobTrace is the trace header of u's job id as the runner took it.
func (b *bench) jobTrace(u contract.User, id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.traces[contract.MsgID(u, id, "job")]
}

// sendTraced publishes a message as ingress does, with its trace, and
// waits until the dispatcher has handled it.
func (b *bench) sendTraced(u contract.User, id, text, trace string) {
	b.t.Helper()
	data, err := contract.Encode(&contract.Inbound{ID: id, User: u, Text: text, At: time.Now().UTC()})
	if err != nil {
		b.t.Fatal(err)
	}
	ack, err := bus.Publish(contract.WithTrace(b.t.Context(), trace), b.js, contract.InboundSubject(u), data, contract.MsgID(u, id))
	if err != nil {
		b.t.Fatal(err)
	}
	b.inboundHandled(ack.Sequence)
}

// finishTraced publishes job id's done event as the runner does, with the
// job's trace, and waits until the dispatcher has handled it.
func (b *bench) finishTraced(u contract.User, id, trace string, approval bool) {
	b.t.Helper()
	ctx := contract.WithTrace(b.t.Context(), trace)
	ev := contract.Event{Kind: contract.KindDone, User: u, JobID: id, Status: contract.StatusOK, Text: "ok", Approval: approval}
	if err := bus.PublishEvent(ctx, b.js, ev, contract.MsgID(u, id, "done")); err != nil {
		b.t.Fatal(err)
	}
	raw := b.raw(contract.StreamEvents, contract.EventSubject(u, contract.KindDone))
	b.doneHandled(raw[len(raw)-1].Sequence)
}

// tracesOf are the trace headers of the messages of stream on subject
// about job: those whose payload names it as id or job_id.
func (b *bench) tracesOf(stream, subject, job string) []string {
	b.t.Helper()
	var out []string
	for _, m := range b.raw(stream, subject) {
		var ref struct {
			ID    string `json:"id"`
			JobID string `json:"job_id"`
		}
		if err := json.Unmarshal(m.Data, &ref); err != nil {
			b.t.Fatalf("%s: %v", m.Subject, err)
		}
		if ref.ID == job || ref.JobID == job {
			out = append(out, bus.Trace(m.Header))
		}
	}
	return out
}

// The trace of each message goes onto everything the dispatcher publishes
// for it: its notices, its place in the queue, its job (also when it
// starts from the queue, at the end of another message's run), its state
// events and its approval timeout, which fires with it. The handling of a
// done event logs with the trace of its job.
func TestTraceCarriedOn(t *testing.T) {
	b := newBench(t, dispatcher.Config{ApprovalTimeout: time.Second})
	var logs natstest.Logs
	b.stopDispatcher() // run it again, logging every line
	b.log = zerolog.New(&logs)
	b.startDispatcher()
	u := user(t, "alice")
	t1, t2 := contract.NewTrace(""), contract.NewTrace("")
	// wantTrace waits for n messages about job on subject, all with trace want.
	wantTrace := func(what, stream, subject, job string, n int, want string) {
		t.Helper()
		natstest.CheckFor(t, wait, poll, func() error {
			got := b.tracesOf(stream, subject, job)
			if len(got) != n || slices.ContainsFunc(got, func(tr string) bool { return tr != want }) {
				return fmt.Errorf("%s: traces %q; want %d times %q", what, got, n, want)
			}
			return nil
		})
	}

	b.sendTraced(u, "m1", "echo one", t1)
	b.waitRan(u, "m1")
	if got := b.jobTrace(u, "m1"); got != t1 {
		t.Errorf("job m1: trace %q; want its message's %q", got, t1)
	}
	wantTrace("m1 idle->working", contract.StreamEvents, contract.EventSubject(u, contract.KindState), "m1", 1, t1)

	b.sendTraced(u, "m2", "echo two", t2)
	wantTrace("m2 queued", contract.StreamQueue, contract.QueueSubject(u), "m2", 1, t2)
	wantTrace("m2's notice", contract.StreamEvents, contract.EventSubject(u, contract.KindNotice), "m2", 1, t2)
	if n := len(logs.Find(t, "queued", map[string]string{"job_id": "m2", contract.LogTrace: t2})); n != 1 {
		t.Errorf("%d 'queued' lines for m2 with its trace; want 1", n)
	}

	// m1's run ends: m2 starts from the queue, on its own journey.
	b.finishTraced(u, "m1", t1, false)
	b.waitRan(u, "m1", "m2")
	if got := b.jobTrace(u, "m2"); got != t2 {
		t.Errorf("job m2, started from the queue: trace %q; want its message's %q", got, t2)
	}
	wantTrace("m2 working->working", contract.StreamEvents, contract.EventSubject(u, contract.KindState), "m2", 1, t2)
	if n := len(logs.Find(t, "state", map[string]string{"job_id": "m1", "job": "m2", contract.LogTrace: t1})); n != 1 {
		t.Errorf("%d 'state' lines of m1's done with its trace; want 1", n)
	}
	if n := len(logs.Find(t, "job published", map[string]string{"started": "m2", "started_trace": t2, contract.LogTrace: t1})); n != 1 {
		t.Errorf("%d 'job published' lines for m2 from m1's done, naming both traces; want 1", n)
	}

	// m2 asks for approval, which times out: the timeout fires with m2's
	// trace, and its notice carries it.
	b.finishTraced(u, "m2", t2, true)
	b.waitState(u, contract.StateIdle, "")
	wantTrace("m2's fired timeout", contract.StreamTimers, contract.ApprovalExpiredSubject(u), "m2", 1, t2)
	wantTrace("m2's notices", contract.StreamEvents, contract.EventSubject(u, contract.KindNotice), "m2", 2, t2)
	wantTrace("m2's state events", contract.StreamEvents, contract.EventSubject(u, contract.KindState), "m2", 3, t2)
}
