package dispatcher_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// With the shell as the agent, mode sets nothing the shell would ignore,
// status says so, and help says what the shell does.
func TestShellAgentHasNoModes(t *testing.T) {
	b := newBench(t, dispatcher.Config{Agent: "shell"})
	u := user(t, "alice")
	if got, want := b.say(u, "m1", "mode plan"), []string{fsm.MsgModeShell}; !slices.Equal(got, want) {
		t.Errorf("mode plan: got %q; want %q", got, want)
	}
	if got, want := b.say(u, "s1", "status"), []string{"Idle: nothing is running.\nMode: none (the shell runs each message as a command)."}; !slices.Equal(got, want) {
		t.Errorf("status: got %q; want %q", got, want)
	}
	if got := b.say(u, "h1", "help"); len(got) != 1 || !strings.Contains(got[0], "Here the agent is the shell") {
		t.Errorf("help: got %q; want it to say the agent is the shell", got)
	}
	b.say(u, "j1", "echo planned")
	if j := b.job(u, "j1"); j.Text != "echo planned" || j.Mode == contract.ModePlan {
		t.Errorf("job after mode plan: %+v; want echo planned, not in plan mode", j)
	}
}

// A command agent is told the mode; mode and status say so.
func TestCommandAgentIsToldTheMode(t *testing.T) {
	b := newBench(t, dispatcher.Config{Agent: "my-agent --fast"})
	u := user(t, "alice")
	if got, want := b.say(u, "m1", "mode plan"), []string{"Mode plan: " + fsm.MsgModeCommand}; !slices.Equal(got, want) {
		t.Errorf("mode plan: got %q; want %q", got, want)
	}
	if got := b.say(u, "s1", "status"); len(got) != 1 || !strings.HasSuffix(got[0], "\nMode: plan (told to the agent, a command, which decides what it means).") {
		t.Errorf("status: got %q; want the mode, told to the command", got)
	}
	b.say(u, "j1", "do it")
	if j := b.job(u, "j1"); j.Mode != contract.ModePlan {
		t.Errorf("job's mode %q; want %q", j.Mode, contract.ModePlan)
	}
}

// btw while the shell works: the person is told at once that it waits
// its turn, and it runs next as a command of its own, without the btw.
func TestShellAgentBtwWaitsItsTurn(t *testing.T) {
	b := newBench(t, dispatcher.Config{Agent: "shell"})
	u := user(t, "alice")
	b.say(u, "j1", "sleep 100")
	b.waitRan(u, "j1")
	got := b.say(u, "b1", "btw echo also")
	if want := []string{fsm.MsgNoSteer, dispatcher.MsgQueued}; !slices.Equal(got, want) {
		t.Errorf("btw: got %q; want %q", got, want)
	}
	if steers := b.events(u, contract.KindSteer); len(steers) != 0 {
		t.Errorf("steer events %+v; want none: the shell cannot take them", steers)
	}
	b.finish(u, "j1", false)
	b.waitRan(u, "j1", "b1")
	if j := b.job(u, "b1"); j.Text != "echo also" {
		t.Errorf("the btw's job runs %q; want %q", j.Text, "echo also")
	}
}
