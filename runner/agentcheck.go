package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/sandbox"
)

// checkCommand refuses a command line agent whose program is not there:
// a typo of claude or shell (TEXTSLASH_AGENT=claud) would otherwise start
// and fail every message with exit code 127.
func checkCommand(line string) error {
	prog := agent.Command{Line: line}.Program()
	if prog == "" {
		return nil // shell syntax first, or a path in the workspace: the run will tell
	}
	_, err := exec.LookPath(prog)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrPermission):
		return contract.BadSetting(service, "Agent", line, prog+" is not executable")
	case !strings.Contains(prog, "/") && bashKnows(prog):
		return nil // a builtin or keyword: exec cat, { …; }
	case strings.Contains(prog, "/"):
		return contract.BadSetting(service, "Agent", line, "no program "+prog+" (agents: shell, claude, or a command line)")
	}
	return contract.BadSetting(service, "Agent", line, "no program "+prog+" in PATH (agents: shell, claude, or a command line)")
}

// checkACP refuses an ACP agent whose program is not there, saying how
// to install it.
func checkACP(name string, a *agent.ACP) error {
	if line, ok := strings.CutPrefix(name, contract.ACPPrefix); ok {
		return checkCommand(strings.TrimSpace(line))
	}
	if _, err := exec.LookPath(a.Bin); err != nil {
		return contract.BadSetting(service, "Agent", name, "no program "+a.Bin+" ("+acpInstall[name]+", or set TEXTSLASH_AGENT_BIN)")
	}
	return nil
}

// acpInstall says how each ACP agent by name is installed.
var acpInstall = map[string]string{
	contract.AgentGemini:   "npm install -g @google/gemini-cli",
	contract.AgentCodex:    "npm install -g @zed-industries/codex-acp",
	contract.AgentOpencode: "npm install -g opencode-ai",
}

// bashKnows says whether bash runs word as a builtin or keyword.
func bashKnows(word string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "-c", `type -t -- "$1"`, "bash", word).Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}

// checkAuth warns, at start, when Claude Code could not authenticate in
// a run: every message would fail. It asks the CLI as a run would, as the
// agent user, with the agents' environment and a fresh home (a person's
// first run has one), so a `claude login` of the operator's does not
// count: runs do not see it.
func (r *Runner) checkAuth(ctx context.Context) {
	cl, claude := r.agent.(*agent.Claude)
	a, acp := r.agent.(*agent.ACP)
	if !claude && !acp {
		return
	}
	tmp, err := os.MkdirTemp("", "textslash-auth-")
	if err == nil {
		defer os.RemoveAll(tmp)
		err = os.Chmod(tmp, 0o755) // the agent user goes through to the home
	}
	if err != nil {
		r.log.Warn().Err(err).Msg("Claude Code's credentials not checked")
		return
	}
	if acp {
		r.checkACP(ctx, a, tmp)
		return
	}
	command := sandbox.CommandFunc(string(filepath.Separator), filepath.Join(tmp, "home"), r.user, true)
	err = cl.CheckAuth(ctx, command)
	var se *agent.SetupError
	switch {
	case errors.As(err, &se) && se.Reason == agent.ReasonNotLoggedIn:
		r.log.Warn().Str("claude", cl.Bin).Msg(fmt.Sprintf("Claude Code is not logged in for the agents' runs, so every message will fail: %s "+
			"(a `claude login` does not reach the runs: each person's run has a home of its own)", agent.FixClaudeAuth))
	case errors.As(err, &se):
		r.log.Warn().Str("claude", cl.Bin).Msg(fmt.Sprintf("Claude Code (%s) cannot run, so every message will fail: %s", cl.Bin, se.Reason))
	case err != nil:
		r.log.Warn().Err(err).Msg("Claude Code's credentials not checked")
	}
}

// checkACP warns, at start, when the ACP agent a cannot run or says it
// needs credentials, started as a run would start it in a fresh home
// under tmp; it logs the agent that runs when it can.
func (r *Runner) checkACP(ctx context.Context, a *agent.ACP, tmp string) {
	dir, home := filepath.Join(tmp, "work"), filepath.Join(tmp, "home")
	for _, d := range []string{dir, home} {
		err := os.Mkdir(d, 0o700)
		if err == nil && r.user != nil {
			err = os.Chown(d, int(r.user.UID), int(r.user.GID))
		}
		if err != nil {
			r.log.Warn().Err(err).Str("agent", a.Name).Msg("the agent's credentials not checked")
			return
		}
	}
	command := sandbox.CommandFunc(dir, home, r.user, true)
	err := a.Check(ctx, dir, command)
	var se *agent.SetupError
	switch {
	case errors.As(err, &se) && strings.HasPrefix(se.Reason, agent.ReasonACPNotLoggedIn):
		r.log.Warn().Str("agent", a.Name).Msg(fmt.Sprintf("%s is not logged in for the agents' runs, so every message will fail: %s (%s)", a.Name, a.Fix(), se.Reason))
	case errors.As(err, &se):
		r.log.Warn().Str("agent", a.Name).Msg(fmt.Sprintf("%s (%s) cannot run, so every message will fail: %s", a.Name, a.Bin, se.Reason))
	case err != nil:
		r.log.Warn().Err(err).Str("agent", a.Name).Msg(fmt.Sprintf("%s (%s) did not start as a run would start it, so messages may fail", a.Name, a.Bin))
	default:
		r.log.Info().Str("agent", a.Name).Str("bin", a.Bin).Msg("the agent starts and opens a session as runs will (Agent Client Protocol)")
	}
}
