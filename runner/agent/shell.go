package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// Shell runs the message as a bash script in the workspace and replies with
// its output: a remote terminal, and the agent that needs no account.
//
// It runs only the person's own words (script): what they typed, and what
// they said in a voice note (told to them as heard before it runs). The
// files they send are saved in the workspace's inbox, never run: a
// message of files alone is answered with where they were saved. Its
// output's marker lines hand over
// images and files as every agent's do (handoverLines).
type Shell struct{}

// Run runs bash -c <script>, stdout and stderr together; a message
// without words only has its files saved.
func (Shell) Run(ctx context.Context, r *Run) (Result, error) {
	script := shellScript(r.Job.Text)
	if script == "" {
		return Result{Text: savedLine(r)}, nil
	}
	cmd := r.Command(ctx, "bash", "-c", script)
	out := &output.CappedBuffer{Max: r.OutputCap}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	sandbox.EndGroup(cmd)
	res := Result{ExitCode: sandbox.ExitCode(cmd), Truncated: out.Truncated()}
	res.Text, res.Handovers = handoverLines(out.String())
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

// shellScript is the script of a message's text: its lines as bash reads
// them (a line break sent as \r\n, as browsers' forms send it, is \n), and
// empty when there are no words.
func shellScript(text string) string {
	return strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n"))
}

// savedLine says where the files the person sent were saved (and how many
// could not be had); empty when they sent none.
func savedLine(r *Run) string {
	var parts []string
	if len(r.Attachments) > 0 {
		parts = append(parts, "Saved "+strings.Join(r.Attachments, ", ")+".")
	}
	switch {
	case r.Unfetched == 1:
		parts = append(parts, "1 file could not be saved.")
	case r.Unfetched > 1:
		parts = append(parts, fmt.Sprintf("%d files could not be saved.", r.Unfetched))
	}
	return strings.Join(parts, " ")
}
