package runner

import (
	"context"
	"fmt"
)

// Shell runs the message as a bash script in the workspace and replies with
// its output: a remote terminal, and the agent that needs no account.
type Shell struct{}

// Run runs bash -c <message>, stdout and stderr together.
func (Shell) Run(ctx context.Context, r *Run) (Result, error) {
	cmd := r.Command(ctx, "bash", "-c", r.Job.Text)
	out := &cappedBuffer{max: r.OutputCap}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	endGroup(cmd)
	res := Result{Text: out.buf.String(), ExitCode: exitCode(cmd), Truncated: out.truncated}
	if res.Truncated {
		res.Text += "\n[output truncated]"
	}
	if res.ExitCode != 0 && ctx.Err() == nil {
		// A failing command is a normal answer for a terminal: show the
		// code. A run stopped from outside (cancel, time up) exits by the
		// signal sent, which the report says in words.
		res.Text += fmt.Sprintf("\n[exit %d]", res.ExitCode)
	}
	if err != nil && cmd.ProcessState == nil {
		return res, fmt.Errorf("start bash: %w", err)
	}
	return res, nil
}
