package fsm

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
)

// An agent without permission prompts (the shell, a command) is not told
// it has modes it ignores, and a message added to its run (btw, steer on)
// waits its turn instead of being promised to an agent that cannot take
// it.
func TestStepAgentsWithoutPrompts(t *testing.T) {
	idle := contract.UserState{State: contract.StateIdle}
	working := contract.UserState{State: contract.StateWorking, JobID: jobJ}
	steering := working
	steering.Steer = true
	planned := idle
	planned.Mode, planned.Usual = contract.ModePlan, ""
	commandPlan := idle
	commandPlan.Mode = contract.ModePlan
	notice := func(text string) Effect { return Effect{Kind: Notice, Text: text} }
	kw := func(agent, k, arg string) Input {
		return Input{Kind: Keyword, Keyword: k, Arg: arg, Text: k + " " + arg, ID: kwK, Agent: agent}
	}
	cases := []stepCase{
		{"shell + mode plan → no mode set, told why", idle, kw(AgentShell, Mode, "plan"), idle, []Effect{notice(MsgModeShell)}},
		{"shell + mode nonsense → told the same", idle, kw(AgentShell, Mode, "x"), idle, []Effect{notice(MsgModeShell)}},
		{"command + mode plan → set, told what it means", idle, kw(AgentCommand, Mode, "plan"),
			commandPlan, []Effect{notice("Mode plan: " + MsgModeCommand)}},
		{"shell, working + btw → queued, told so", working, kw(AgentShell, Btw, "echo x"),
			working, []Effect{notice(MsgNoSteer), {Kind: Enqueue, ID: kwK}}},
		{"command, working + btw → queued, told so", working, kw(AgentCommand, Btw, "x"),
			working, []Effect{notice(MsgNoSteer), {Kind: Enqueue, ID: kwK}}},
		{"shell, working, steer on + message → queued", steering, Input{Kind: Message, ID: msgM, Text: "hi", Agent: AgentShell},
			steering, []Effect{{Kind: Enqueue, ID: msgM}}},
		{"shell + steer on → not set, told why", idle, kw(AgentShell, Steer, "on"), idle, []Effect{notice(MsgSteerNone)}},
		{"shell, a plan mode from before + go → a message like any other", planned, Input{Kind: Keyword, Keyword: Go, Text: "go", ID: kwK, Agent: AgentShell},
			func() contract.UserState {
				s := planned
				s.State, s.JobID, s.JobMode = contract.StateWorking, kwK, contract.ModePlan
				return s
			}(),
			[]Effect{{Kind: Start, ID: kwK, Mode: contract.ModePlan}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, eff := Step(c.from, c.in)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Step(%s, %s): got state %s; want %s", fmtSnap(c.from), fmtInput(c.in), fmtSnap(got), fmtSnap(c.want))
			}
			if !slices.Equal(eff, c.eff) {
				t.Errorf("Step(%s, %s):\n got effects  %s\n want effects %s", fmtSnap(c.from), fmtInput(c.in), fmtEffects(eff), fmtEffects(c.eff))
			}
		})
	}
}

// help and status say what the agent here does with modes.
func TestHelpAndModeStatusPerAgent(t *testing.T) {
	for _, tt := range []struct {
		agent, mode, status, help string
	}{
		{AgentClaude, contract.ModePlan, "Mode: plan.", ""},
		{AgentShell, contract.ModePlan, "Mode: none (the shell runs each message as a command).", "Here the agent is the shell"},
		{AgentCommand, contract.ModeAsk, "Mode: ask (" + modeCommandNote + ").", "Here the agent is a command"},
	} {
		if got := ModeStatus(tt.agent, tt.mode); got != tt.status {
			t.Errorf("ModeStatus(%q, %q): got %q; want %q", tt.agent, tt.mode, got, tt.status)
		}
		_, eff := Step(contract.UserState{State: contract.StateIdle}, Input{Kind: Keyword, Keyword: Help, ID: kwK, Agent: tt.agent})
		if len(eff) != 1 || !strings.HasPrefix(eff[0].Text, MsgHelp) {
			t.Fatalf("help for %q: got %s; want the help", tt.agent, fmtEffects(eff))
		}
		if note := strings.TrimPrefix(eff[0].Text, MsgHelp); (tt.help == "") != (note == "") || !strings.Contains(note, tt.help) {
			t.Errorf("help for %q ends %q; want %q", tt.agent, note, tt.help)
		}
	}
}
