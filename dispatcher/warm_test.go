package dispatcher_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
)

// finishWarm publishes the done event of job id as a runner that keeps
// the person's home does (until: when it lets it go; zero: not kept), and
// waits until the dispatcher has handled it.
func (b *bench) finishWarm(u contract.User, id, status string, until time.Time) {
	b.t.Helper()
	b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: id, Status: status, Text: "ok", WarmUntil: until})
	b.doneHandled(b.lastDone(u))
}

// lastDone is the EVENTS sequence of u's last done event.
func (b *bench) lastDone(u contract.User) uint64 {
	b.t.Helper()
	st, err := b.js.Stream(b.t.Context(), contract.StreamEvents)
	if err != nil {
		b.t.Fatal(err)
	}
	raw, err := st.GetLastMsgForSubject(b.t.Context(), contract.EventSubject(u, contract.KindDone))
	if err != nil {
		b.t.Fatal(err)
	}
	return raw.Sequence
}

// status is the person's one status reply, to message id.
func (b *bench) status(u contract.User, id string) string {
	b.t.Helper()
	got := b.say(u, id, "status")
	if len(got) != 1 {
		b.t.Fatalf("status: got notices %q; want one", got)
	}
	return got[0]
}

// warmLine is status's line while the person's home is warm until t, in
// zone loc.
func warmLine(t time.Time, loc *time.Location) string {
	return "\nAgent: warm until " + t.In(loc).Format("15:04") + " (" + loc.String() + "), so your next message starts at once."
}

// TestStatusSaysWarm: after a run whose done event says the person's
// home stays warm until a time to come, status says until when, in the
// person's time zone, whatever the agent; once that time has passed it
// says nothing of it.
func TestStatusSaysWarm(t *testing.T) {
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		agent string
		until time.Time
		warm  bool
	}{
		{"claude, warm for ten minutes", "", time.Now().Add(10 * time.Minute), true},
		{"shell, warm for ten minutes", contract.AgentShell, time.Now().Add(10 * time.Minute), true},
		{"claude, was warm until a minute ago", "", time.Now().Add(-time.Minute), false},
		{"claude, not kept", "", time.Time{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, dispatcher.Config{Agent: tt.agent})
			u := user(t, "alice")
			b.say(u, "z1", "tz Asia/Kolkata")
			b.into(u, contract.StateWorking)
			b.finishWarm(u, "w1", contract.StatusOK, tt.until)
			b.waitState(u, contract.StateIdle, "")
			got := b.status(u, "s1")
			if tt.warm {
				if want := warmLine(tt.until, loc); !strings.Contains(got, want) {
					t.Errorf("status: got %q; want it to contain %q", got, want)
				}
			} else if strings.Contains(got, "warm") {
				t.Errorf("status: got %q; want nothing about warmth", got)
			}
		})
	}
}

// TestWarmOutlastsTheNextStart: a run starting leaves what the last done
// said (the home is still there), and status says nothing of it while the
// run works (the home is in use); the cancelled run's done, not kept,
// clears it; an old runner's done, without warm_until, reads as not kept.
func TestWarmOutlastsTheNextStart(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "alice")
	until := time.Now().Add(10 * time.Minute).UTC().Truncate(time.Second)
	b.into(u, contract.StateWorking)
	b.finishWarm(u, "w1", contract.StatusOK, until)
	b.say(u, "w2", "sleep 100")
	b.waitRan(u, "w1", "w2")
	b.waitState(u, contract.StateWorking, "w2")
	if st, _ := b.state(u); !st.WarmUntil.Equal(until) {
		t.Errorf("after w2 started: WarmUntil = %v; want %v", st.WarmUntil, until)
	}
	if got := b.status(u, "s0"); strings.Contains(got, "warm") {
		t.Errorf("status while w2 runs: got %q; want nothing about warmth (the home is in use)", got)
	}
	b.say(u, "c1", "cancel")
	b.waitState(u, contract.StateIdle, "")
	if got := b.status(u, "s1"); !strings.Contains(got, "Agent: warm until ") {
		t.Errorf("status after cancel, before the run's done: got %q; want the home warm still", got)
	}
	b.finishWarm(u, "w2", contract.StatusCanceled, time.Time{})
	if got := b.status(u, "s2"); strings.Contains(got, "warm") {
		t.Errorf("status after the cancelled run's done, not kept: got %q; want nothing about warmth", got)
	}

	b.say(u, "w3", "echo w3")
	b.waitRan(u, "w1", "w2", "w3")
	b.finishWarm(u, "w3", contract.StatusOK, until)
	if got := b.status(u, "s3"); !strings.Contains(got, "Agent: warm until ") {
		t.Fatalf("status after w3: got %q; want the home warm", got)
	}
	b.say(u, "w4", "echo w4")
	b.waitRan(u, "w1", "w2", "w3", "w4")
	old := `{"v":1,"kind":"done","user":{"channel":"web","id":"alice"},"job_id":"w4","at":"` +
		time.Now().UTC().Format(time.RFC3339) + `","text":"ok","status":"ok"}`
	ack, err := b.js.Publish(t.Context(), contract.EventSubject(u, contract.KindDone), []byte(old),
		jetstream.WithMsgID(contract.MsgID(u, "w4", "done")))
	if err != nil {
		t.Fatal(err)
	}
	b.doneHandled(ack.Sequence)
	b.waitState(u, contract.StateIdle, "")
	if got := b.status(u, "s4"); strings.Contains(got, "warm") {
		t.Errorf("status after an old runner's done: got %q; want nothing about warmth", got)
	}
}

// TestStatusListsBackground: what the person's home keeps running in the
// background, as the last run's end said, is in status with how long it
// has run, while the home is warm; once the home is let go, nothing is.
func TestStatusListsBackground(t *testing.T) {
	for _, tt := range []struct {
		name  string
		until time.Time
		want  bool
	}{
		{"warm", time.Now().Add(10 * time.Minute), true},
		{"let go", time.Now().Add(-time.Minute), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			b.into(u, contract.StateWorking)
			started := time.Now().Add(-12*time.Minute - 5*time.Second)
			b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: "w1", Status: contract.StatusOK, Text: "ok", WarmUntil: tt.until,
				Background: []contract.Background{{ID: "a1b2", Command: "npm run dev", Started: started}}})
			b.doneHandled(b.lastDone(u))
			b.waitState(u, contract.StateIdle, "")
			got := b.status(u, "s1")
			line := "In the background: a1b2 npm run dev, for 12m"
			if has := strings.Contains(got, line) && strings.Contains(got, "stop a1b2"); has != tt.want {
				t.Errorf("status:\n%s\nsays %q and stop a1b2: %v; want %v", got, line, has, tt.want)
			}
		})
	}
}
