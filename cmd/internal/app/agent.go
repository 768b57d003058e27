package app

import (
	"fmt"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner"
	"github.com/textslash/textslash/runner/agent"
)

// agentLine says in one plain line which agent runs and, when Claude Code
// is installed but the shell runs in its place, why and what to set. asked
// is TEXTSLASH_AGENT, picked the runner's agent, claudeBin the Claude Code
// binary it found ("" for none), user TEXTSLASH_AGENT_USER.
func agentLine(asked, picked, claudeBin, user string) string {
	if a, ok := agent.NamedACP(picked, ""); ok {
		return acpLine(picked, a, user)
	}
	switch {
	case picked == runner.AgentClaude && user != "":
		return fmt.Sprintf("agent: claude (Claude Code %s, run as %s)", claudeBin, user)
	case picked == runner.AgentClaude:
		return fmt.Sprintf("agent: claude (Claude Code %s)", claudeBin)
	case asked == runner.AgentShell:
		return "agent: shell (TEXTSLASH_AGENT=shell): bash runs each message"
	case asked != "":
		return fmt.Sprintf("agent: the command %q (TEXTSLASH_AGENT): each message on its stdin", asked)
	case claudeBin != "":
		return "agent: shell, not Claude Code: Claude Code is installed (" + claudeBin + ") but will not run as root; " +
			"set TEXTSLASH_AGENT_USER to an unprivileged OS user (scripts/dev makes textslash-agent)"
	default:
		return "agent: shell: bash runs each message (for Claude Code: npm install -g @anthropic-ai/claude-code, and set ANTHROPIC_API_KEY, or CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`)"
	}
}

// acpNames are the ACP agents' names as people know them.
var acpNames = map[string]string{
	contract.AgentGemini:   "Gemini CLI",
	contract.AgentCodex:    "Codex, through codex-acp",
	contract.AgentOpencode: "opencode",
}

// acpLine is agentLine's for an agent spoken to over the Agent Client
// Protocol (a, by the name picked).
func acpLine(picked string, a *agent.ACP, user string) string {
	as := ""
	if user != "" {
		as = ", run as " + user
	}
	if name, ok := acpNames[picked]; ok {
		return fmt.Sprintf("agent: %s (%s over the Agent Client Protocol%s)", picked, name, as)
	}
	return fmt.Sprintf("agent: %q (over the Agent Client Protocol%s)", strings.TrimPrefix(picked, contract.ACPPrefix), as)
}
