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
	"github.com/textslash/textslash/runner/memory"
	"github.com/textslash/textslash/runner/sandbox"
)

// With the defaults, everyone who writes runs at once as far as memory
// goes: twelve people's messages, each waiting on the others (as agents
// wait on the model), all run together. Before, at most four ran at once
// (TEXTSLASH_CONCURRENCY 4), the others waiting in waves while the CPU
// idled.
func TestEveryoneRunsAtOnceByDefault(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute})
	const people = 12
	dir := t.TempDir()
	// Each run says it is in, then waits until all twelve are: with fewer
	// at once, none gets past the wait before the timeout.
	script := fmt.Sprintf(`touch %s/$RANDOM$RANDOM; for i in $(seq 300); do [ $(ls %s | wc -l) -ge %d ] && echo together && exit; sleep 0.1; done; echo alone`, dir, dir, people)
	var users []contract.User
	for i := range people {
		u := e.user(contract.ChannelWeb, fmt.Sprintf("crowd%02d", i))
		users = append(users, u)
		e.job(u, "j", script)
	}
	for _, u := range users {
		if ev := e.waitDone(u, "j", runnerWait); strings.TrimSpace(ev.Text) != "together" {
			t.Errorf("%s: %q; want together (all %d running at once)", u.Key(), ev.Text, people)
		}
	}
}

// When memory is short, a run waits for it, and its person is told why
// (a progress line, which status shows as the run's last step); it
// starts once there is room. A fixed count (Concurrency) is not what
// holds it back.
func TestRunWaitsForMemory(t *testing.T) {
	e := newRunnerEnv(t)
	var room atomic.Bool
	e.prepare = func(r *Runner) {
		r.mem.Available = func() int64 {
			if room.Load() {
				return 64 << 30
			}
			return 0
		}
	}
	e.start(Config{Timeout: time.Minute})
	u := e.user(contract.ChannelWeb, "waiter")
	e.job(u, "j", "echo ran")
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for _, ev := range e.events(u, contract.KindProgress) {
			if ev.JobID == "j" && ev.Text == MsgWaitMemory {
				return nil
			}
		}
		return fmt.Errorf("no notice saying the run waits for memory")
	})
	if _, _, done := e.doneEvent(u, "j"); done {
		t.Fatal("the run ended while there was no memory for it")
	}
	room.Store(true)
	if ev := e.waitDone(u, "j", runnerWait); strings.TrimSpace(ev.Text) != "ran" {
		t.Errorf("once there is memory: %q; want ran", ev.Text)
	}
}

// A run short of memory makes room by letting go of what nobody uses: a
// person's home kept since their last run goes, and the waiting run
// starts. Before, homes went only past a count (TEXTSLASH_HOMES_MAX 8) or
// idle time, whatever the memory.
func TestHomeLetGoForMemory(t *testing.T) {
	if sandbox.ProbeHomes() != nil {
		t.Skip("no homes here")
	}
	e := newRunnerEnv(t)
	var runner atomic.Pointer[Runner]
	e.prepare = func(r *Runner) {
		runner.Store(r)
		r.mem.Available = func() int64 {
			r.mu.Lock()
			running := len(r.running)
			r.mu.Unlock()
			if r.HomeStats().Warm > 0 && running > 0 {
				return 0 // the homes kept take it all
			}
			return 64 << 30
		}
	}
	e.start(Config{Timeout: time.Minute, Sandbox: &sandbox.Sandbox{}, HomeIdle: time.Hour})
	a, b := e.user(contract.ChannelWeb, "kepta"), e.user(contract.ChannelWeb, "waitb")
	e.job(a, "first", "echo a")
	if ev := e.waitDone(a, "first", runnerWait); strings.TrimSpace(ev.Text) != "a" {
		t.Fatalf("A's run: %q", ev.Text)
	}
	if n := runner.Load().HomeStats().Warm; n != 1 {
		t.Fatalf("homes kept after A's run: %d; want 1", n)
	}
	time.Sleep(memory.Fresh) // the gate's look at the memory for A's run is old by then
	e.job(b, "second", "echo b")
	if ev := e.waitDone(b, "second", runnerWait); strings.TrimSpace(ev.Text) != "b" {
		t.Errorf("B's run: %q; want b", ev.Text)
	}
	if n := runner.Load().HomeStats().Warm; n != 1 {
		t.Errorf("homes kept after B's run: %d; want 1 (A's let go for B's)", n)
	}
}

// Under memory pressure a warm agent goes before its home: with Claude
// Code warm in A's home and no memory for B's run, A's CLI is let go and
// A's home (network, disk) stays; B runs, and A's next message resumes A's
// session in the home that stayed.
func TestWarmAgentGoesBeforeItsHome(t *testing.T) {
	if sandbox.ProbeHomes() != nil {
		t.Skip("no homes here")
	}
	model := claudetest.NewModel(t, claudetest.Text("a one"), claudetest.Text("b one"), claudetest.Text("a two"))
	claudetest.Setenv(t, model)
	e := newRunnerEnv(t)
	var runner atomic.Pointer[Runner]
	e.prepare = func(r *Runner) {
		runner.Store(r)
		r.mem.Available = func() int64 {
			warm := r.homes.WarmAgents() > 0
			r.mu.Lock()
			defer r.mu.Unlock()
			if warm && len(r.running) > 0 {
				return 0 // a warm agent takes it all
			}
			return 64 << 30
		}
	}
	e.start(Config{Agent: AgentClaude, ClaudeBin: claudetest.Binary(t), AgentUser: claudetest.AgentUser(t),
		Sandbox: &sandbox.Sandbox{}, HomeIdle: time.Hour})
	a, b := e.user(contract.ChannelWeb, "warma"), e.user(contract.ChannelWeb, "warmb")
	say := func(u contract.User, id, want string) {
		t.Helper()
		time.Sleep(memory.Fresh) // the gate's look at the memory for the last run is old by then
		if ev := e.run(contract.Job{ID: id, User: u, Text: "hello", Mode: contract.ModeAuto}); ev.Text != want {
			t.Fatalf("%s's %s: %s %q; want %q", u.Key(), id, ev.Status, ev.Text, want)
		}
	}
	say(a, "a1", "a one")
	say(b, "b1", "b one")
	r := runner.Load()
	if n := r.HomeStats().Warm; n != 2 {
		t.Errorf("homes kept: %d; want A's and B's", n)
	}
	if warm := r.homes.WarmAgents(); warm != 1 {
		t.Errorf("warm agents: %d; want B's alone (A's let go for B's run)", warm)
	}
	say(a, "a2", "a two")
}
