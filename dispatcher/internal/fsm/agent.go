package fsm

import "fmt"

// Agents, as far as a person's keywords go (Input.Agent): what runs their
// messages decides what mode, btw, steer, go and help mean.
const (
	// AgentClaude: Claude Code (and an agent this machine is not told
	// of): modes, questions, messages added to a run.
	AgentClaude = ""
	// AgentShell: bash runs each message as a command; it has no modes
	// and takes no messages while it works.
	AgentShell = "shell"
	// AgentCommand: an operator's own command line: told the person's
	// mode, it decides what it means; it asks no questions and takes no
	// messages while it works.
	AgentCommand = "command"
	// AgentACP: an agent spoken to over the Agent Client Protocol (Gemini
	// CLI, Codex, opencode): modes and questions as Claude Code's, but it
	// takes no messages while it works.
	AgentACP = "acp"
)

// Texts for agents other than Claude Code.
const (
	MsgModeShell   = "The agent here is the shell: it runs each message as a command, at once. Modes (ask, auto, plan) are Claude Code's, so there is none to set."
	MsgModeCommand = "the agent here is a command, not Claude Code. It is told your mode and decides what it means; it asks you nothing before it acts."
	MsgNoSteer     = "The agent here takes no messages while it works: this one waits its turn and runs as a message of its own."
	MsgSteerNone   = "The agent here takes no messages while it works: what you send waits its turn, so steer changes nothing."
	// modeCommandNote follows a command agent's mode in status.
	modeCommandNote = "told to the agent, a command, which decides what it means"
	helpShell       = "\nHere the agent is the shell: each message runs as a bash command in your workspace. mode, go and the questions are Claude Code's; btw … waits its turn like any message."
	helpCommand     = "\nHere the agent is a command, not Claude Code: it is told your mode and decides what it means, and asks no questions; btw … waits its turn like any message."
	helpACP         = "\nHere the agent is not Claude Code but one spoken to over the Agent Client Protocol: mode, go and the questions work the same; btw … waits its turn like any message."
)

// takesMessages reports whether agent takes messages while it works.
func takesMessages(agent string) bool { return agent == AgentClaude }

// ModeStatus is status's line about the person's mode (mode: theirs, or
// the deployment's default) under agent.
func ModeStatus(agent, mode string) string {
	switch agent {
	case AgentShell:
		return "Mode: none (the shell runs each message as a command)."
	case AgentCommand:
		return fmt.Sprintf("Mode: %s (%s).", mode, modeCommandNote)
	}
	return fmt.Sprintf("Mode: %s.", mode)
}

// HelpFor is the help text under agent.
func HelpFor(agent string) string {
	switch agent {
	case AgentShell:
		return MsgHelp + helpShell
	case AgentCommand:
		return MsgHelp + helpCommand
	case AgentACP:
		return MsgHelp + helpACP
	}
	return MsgHelp
}
