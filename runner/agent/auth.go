package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"time"

	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// ReasonNotLoggedIn is CheckAuth's SetupError's reason when the CLI has
// no credentials.
const ReasonNotLoggedIn = "Not logged in"

// FixClaudeAuth says how the operator gives Claude Code credentials
// every run sees.
const FixClaudeAuth = "set ANTHROPIC_API_KEY, or CLAUDE_CODE_OAUTH_TOKEN to a token from `claude setup-token` (a Claude subscription), where textslash runs"

// authCheckTimeout bounds CheckAuth: the CLI answers in a fraction of a
// second, a loaded machine may take a few.
const authCheckTimeout = 30 * time.Second

// CheckAuth asks the CLI whether a run could authenticate to the model
// API, without a model call: `claude auth status --json`, started by
// command (a run's: its user, home and environment, where an
// ANTHROPIC_API_KEY or a CLAUDE_CODE_OAUTH_TOKEN counts, and credentials
// in the home). It returns a SetupError when the CLI says it is not
// logged in, or cannot be run; nil when it is logged in, or does not say
// (a CLI without the command).
func (c *Claude) CheckAuth(ctx context.Context, command func(ctx context.Context, name string, args ...string) *exec.Cmd) error {
	ctx, cancel := context.WithTimeout(ctx, authCheckTimeout)
	defer cancel()
	cmd := command(ctx, c.bin(), "auth", "status", "--json")
	out := &output.CappedBuffer{Max: stderrKeep}
	stderr := &output.CappedBuffer{Max: stderrKeep}
	cmd.Stdout, cmd.Stderr = out, stderr
	if err := cmd.Start(); err != nil {
		if se := setupStart(cmd, err); se != nil {
			return se
		}
		return fmt.Errorf("claude auth status: %w", err)
	}
	_ = cmd.Wait() // the exit code is read from cmd.ProcessState: 1 when not logged in
	sandbox.EndGroup(cmd)
	var status struct {
		LoggedIn *bool `json:"loggedIn"`
	}
	if json.Unmarshal(out.Bytes(), &status) != nil || status.LoggedIn == nil {
		if se := setupExit(sandbox.ExitCode(cmd), stderr.Bytes()); se != nil {
			return se
		}
		return nil
	}
	if !*status.LoggedIn {
		return &SetupError{Reason: ReasonNotLoggedIn, Fix: FixClaudeAuth}
	}
	return nil
}
