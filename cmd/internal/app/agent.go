package app

import (
	"fmt"

	"github.com/textslash/textslash/runner"
)

// agentLine says in one plain line which agent runs and, when Claude Code
// is installed but the shell runs in its place, why and what to set. asked
// is TEXTSLASH_AGENT, picked the runner's agent, claudeBin the Claude Code
// binary it found ("" for none), user TEXTSLASH_AGENT_USER.
func agentLine(asked, picked, claudeBin, user string) string {
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
