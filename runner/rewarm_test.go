package runner

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/sandbox"
)

// idleState writes u's state as the dispatcher leaves it after a run:
// idle, just changed.
func (e *runnerEnv) idleState(u contract.User, s contract.Settings) {
	e.t.Helper()
	kv, err := e.js.KeyValue(e.t.Context(), contract.BucketUsers)
	if err != nil {
		e.t.Fatal(err)
	}
	data, err := contract.Encode(&contract.UserState{State: contract.StateIdle, Since: time.Now().UTC(), Settings: s})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := kv.Put(e.t.Context(), u.Key(), data); err != nil {
		e.t.Fatal(err)
	}
}

// After a restart, the homes of the people active lately are made again
// without waiting for a message: a person who ran before the restart
// finds, at their next message, the home made for them meanwhile (no home
// made at that message). Someone whose workspace another runner holds
// gets none here. Before, every home was made at its person's next
// message.
func TestHomesMadeAgainAfterRestart(t *testing.T) {
	if sandbox.ProbeHomes() != nil {
		t.Skip("no homes here")
	}
	e := newRunnerEnv(t)
	var runner atomic.Pointer[Runner]
	e.prepare = func(r *Runner) { runner.Store(r) }
	cfg := Config{ID: "r1", Timeout: time.Minute, Sandbox: &sandbox.Sandbox{}, HomeIdle: time.Hour}
	stop := e.start(cfg)
	u := e.user(contract.ChannelWeb, "back")
	e.job(u, "one", "echo one")
	if ev := e.waitDone(u, "one", runnerWait); strings.TrimSpace(ev.Text) != "one" {
		t.Fatalf("first run: %q", ev.Text)
	}
	e.idleState(u, contract.Settings{})
	// Someone whose workspace another runner holds: not this one's to warm.
	other := e.user(contract.ChannelWeb, "elsewhere")
	ws, err := e.js.KeyValue(t.Context(), contract.BucketWorkspaces)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Put(t.Context(), other.Key(), []byte("r2")); err != nil {
		t.Fatal(err)
	}
	e.idleState(other, contract.Settings{})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}

	var logs natstest.Logs
	e.logs = &logs
	e.start(cfg)
	r := runner.Load()
	natstest.CheckFor(t, runnerWait, runnerPoll, func() error {
		if n := len(logs.Find(t, "home made again after a restart", nil)); n != 1 {
			return fmt.Errorf("homes made again: %d; want 1", n)
		}
		return nil
	})
	if st := r.HomeStats(); st.Warm != 1 || st.Starts != 1 {
		t.Errorf("homes after the restart, before any message: %+v; want 1 kept, 1 made", st)
	}
	line := logs.Find(t, "home made again after a restart", nil)[0]
	if h, _ := line["home"].(string); h == "" || strings.Contains(fmt.Sprint(line), u.ID) {
		t.Errorf("log line %v: want the opaque home id, not the person", line)
	}
	e.job(u, "two", "echo two")
	if ev := e.waitDone(u, "two", runnerWait); strings.TrimSpace(ev.Text) != "two" {
		t.Fatalf("run after the restart: %q", ev.Text)
	}
	if st := r.HomeStats(); st.Starts != 1 || st.Reuse != 1 {
		t.Errorf("homes after the next message: %+v; want the one made again reused, none made", st)
	}
	if n := len(logs.Find(t, "home made", map[string]string{"job_id": "two"})); n != 0 {
		t.Errorf("the next message made a home (%d lines); want it to find the one made again", n)
	}
}

// After a restart, Claude Code is started again in the home made again,
// continuing the person's session: their next message reaches the model
// on that CLI, with the turns before the restart, and no CLI starts for
// it. Without the person's recent state (nobody to make again), the
// message starts the CLI itself. The time from the message to the model's
// request is logged for both.
func TestWarmAgentStartedAgainAfterRestart(t *testing.T) {
	if sandbox.ProbeHomes() != nil {
		t.Skip("no homes here")
	}
	for _, rewarmed := range []bool{true, false} {
		t.Run(map[bool]string{true: "rewarmed", false: "cold"}[rewarmed], func(t *testing.T) {
			model := claudetest.NewModel(t, claudetest.Text("before"), claudetest.Text("after"))
			claudetest.Setenv(t, model)
			e := newRunnerEnv(t)
			cfg := Config{ID: "r1", Agent: AgentClaude, ClaudeBin: claudetest.Binary(t), AgentUser: claudetest.AgentUser(t),
				Sandbox: &sandbox.Sandbox{}, HomeIdle: time.Hour, Timeout: claudeTimeout}
			stop := e.start(cfg)
			u := e.user(contract.ChannelWeb, "resumer")
			if ev := e.run(contract.Job{ID: "a1", User: u, Text: "hello", Mode: contract.ModeAuto}); ev.Text != "before" {
				t.Fatalf("before the restart: %s %q", ev.Status, ev.Text)
			}
			if rewarmed {
				e.idleState(u, contract.Settings{Mode: contract.ModeAuto})
			}
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}

			var logs natstest.Logs
			e.logs = &logs
			e.start(cfg)
			started := func() int { return len(logs.Find(t, "claude: started a warm CLI", nil)) }
			if rewarmed {
				natstest.CheckFor(t, claudeTimeout, runnerPoll, func() error {
					if len(logs.Find(t, "home made again after a restart", nil)) == 0 || started() != 1 {
						return fmt.Errorf("no home and warm CLI made again (CLIs started: %d)", started())
					}
					return nil
				})
			}
			want := map[bool]int{true: 1, false: 0}[rewarmed]
			if n := started(); n != want {
				t.Fatalf("CLIs started before the message: %d; want %d", n, want)
			}
			sent := time.Now()
			if ev := e.run(contract.Job{ID: "a2", User: u, Text: "again", Mode: contract.ModeAuto}); ev.Text != "after" {
				t.Fatalf("after the restart: %s %q", ev.Status, ev.Text)
			}
			if n := started(); n != 1 {
				t.Errorf("CLIs started after the restart: %d; want 1 (the message's own when cold, else the one made again)", n)
			}
			reqs := model.MainRequests()
			last := reqs[len(reqs)-1]
			if !strings.Contains(string(last.Body), "before") {
				t.Errorf("the message after the restart reached the model without the session's earlier turn")
			}
			t.Logf("%s: the message reached the model %v after it was sent", map[bool]string{true: "rewarmed", false: "cold"}[rewarmed], last.At.Sub(sent).Round(time.Millisecond))
		})
	}
}
