package contract

import (
	"fmt"
	"strings"
)

// Agents a runner runs by name (TEXTSLASH_AGENT); any other name is a
// command line of the operator's. Modes are Claude Code's: the shell has
// none, and a command is told the job's (runner.ModeVar).
const (
	AgentShell  = "shell"
	AgentClaude = "claude"
	// The agents spoken to over the Agent Client Protocol by name, and the
	// prefix of any other's command line (acp:<command line>).
	AgentGemini   = "gemini"
	AgentCodex    = "codex"
	AgentOpencode = "opencode"
	ACPPrefix     = "acp:"
)

// AgentWho is the agent named so (TEXTSLASH_AGENT, or an ACP agent's
// name) as the person is told of it: "Claude wants to run …", "Gemini
// wants to …"; "the agent" for another ACP agent's command line.
func AgentWho(agent string) string {
	switch agent {
	case AgentGemini:
		return "Gemini"
	case AgentCodex:
		return "Codex"
	case AgentOpencode:
		return "opencode"
	case "", AgentClaude:
		return "Claude"
	}
	return "the agent"
}

// IsACPAgent says whether the agent named so (TEXTSLASH_AGENT) is spoken
// to over the Agent Client Protocol.
func IsACPAgent(agent string) bool {
	switch agent {
	case AgentGemini, AgentCodex, AgentOpencode:
		return true
	}
	return strings.HasPrefix(agent, ACPPrefix) && strings.TrimSpace(agent[len(ACPPrefix):]) != ""
}

// Of says what c cost as the agent named so (TEXTSLASH_AGENT) reports
// it. An agent over the Agent Client Protocol may report no dollars
// (Gemini CLI: tokens only), or nothing (codex-acp): what it did not
// report is left out rather than said to be zero, and nothing reported
// is "". Unreported says which.
func (c Cost) Of(agent string) string {
	switch {
	case !IsACPAgent(agent) || c.USD != 0:
		return c.String()
	case c.InputTokens != 0 || c.OutputTokens != 0:
		return fmt.Sprintf("%s tokens in, %s out", thousands(c.InputTokens), thousands(c.OutputTokens))
	}
	return ""
}

// Unreported says what of c's runs the agent named so did not report, as
// a sentence ("Cost in dollars: not reported by Gemini."), or "".
func (c Cost) Unreported(agent string) string {
	switch {
	case c.Runs == 0 || !IsACPAgent(agent) || c.USD != 0:
		return ""
	case c.InputTokens != 0 || c.OutputTokens != 0:
		return "Cost in dollars: not reported by " + AgentWho(agent) + "."
	}
	return "Cost and tokens: not reported by " + AgentWho(agent) + "."
}
