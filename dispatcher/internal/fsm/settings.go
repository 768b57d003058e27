// The keywords that change the person's contract.Settings: tz, new,
// mode, steer and branches. The machine carries Settings whole through
// every transition (kept, in fsm.go).

package fsm

import (
	"time"

	"github.com/textslash/textslash/contract"
)

// zone sets the person's time zone for schedules.
func zone(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if _, err := time.LoadLocation(in.Arg); err != nil || in.Arg == "Local" {
		return s, []Effect{{Kind: Notice, Text: MsgZoneUsage}}
	}
	s.Zone = in.Arg
	return s, []Effect{{Kind: Notice, Text: MsgZone + in.Arg + "."}}
}

func newSession(s contract.UserState, _ Input) (contract.UserState, []Effect) {
	s.NewSession = true
	return s, []Effect{{Kind: Notice, Text: MsgNewSession}}
}

// mode sets the person's permission mode; it applies from their next run.
// The shell has none; a command agent is told it.
func mode(s contract.UserState, in Input) (contract.UserState, []Effect) {
	arg := in.Arg
	text := map[string]string{contract.ModeAuto: MsgModeAuto, contract.ModeAsk: MsgModeAsk, contract.ModePlan: MsgModePlan}[arg]
	switch {
	case in.Agent == AgentShell:
		return s, []Effect{{Kind: Notice, Text: MsgModeShell}}
	case text == "":
		return s, []Effect{{Kind: Notice, Text: MsgModeUsage}}
	case in.Agent == AgentCommand:
		text = "Mode " + arg + ": " + MsgModeCommand
	}
	s.Mode = arg
	if arg != contract.ModePlan {
		s.Usual = arg
	}
	return s, []Effect{{Kind: Notice, Text: text}}
}

// steer: "steer on" or "steer off", for an agent that takes messages
// while it works.
func steer(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if !takesMessages(in.Agent) {
		return s, []Effect{{Kind: Notice, Text: MsgSteerNone}}
	}
	eff := onOff(in.Arg, &s.Steer, MsgSteerOn, MsgSteerOff, MsgSteerUsage)
	return s, eff
}

// branches: "branches on" or "branches off".
func branches(s contract.UserState, in Input) (contract.UserState, []Effect) {
	eff := onOff(in.Arg, &s.Branches, MsgBranchesOn, MsgBranchesOff, MsgBranchesUsage)
	return s, eff
}

// onOff sets a setting of the person's, *to, as arg says (on or off) and
// tells them; any other arg leaves it and is answered with usage.
func onOff(arg string, to *bool, on, off, usage string) []Effect {
	switch arg {
	case "on":
		*to = true
		return []Effect{{Kind: Notice, Text: on}}
	case "off":
		*to = false
		return []Effect{{Kind: Notice, Text: off}}
	}
	return []Effect{{Kind: Notice, Text: usage}}
}
