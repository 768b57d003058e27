package runner

import (
	"context"
	"fmt"

	"github.com/textslash/textslash/runner/sandbox"
)

// Shell runs the message as a bash script in the workspace and replies with
// its output: a remote terminal, and the agent that needs no account.
type Shell struct{}

// Run runs bash -c <message>, stdout and stderr together.
func (Shell) Run(ctx context.Context, r *Run) (Result, error) {
	cmd := r.Command(ctx, "bash", "-c", r.Job.Text)
	out := &sandbox.CappedBuffer{Max: r.OutputCap}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	sandbox.EndGroup(cmd)
	res := Result{Text: out.String(), ExitCode: sandbox.ExitCode(cmd), Truncated: out.Truncated()}
	if res.Truncated {
		res.Text += "\n[output truncated]"
	}
	if res.ExitCode != 0 {
		// A failing command is a normal answer for a terminal: show the code.
		res.Text += fmt.Sprintf("\n[exit %d]", res.ExitCode)
	}
	if err != nil && cmd.ProcessState == nil {
		return res, fmt.Errorf("start bash: %w", err)
	}
	return res, nil
}
