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
	cl, ok := r.agent.(*agent.Claude)
	if !ok {
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
