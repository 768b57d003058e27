package agent

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

const (
	// maxMarkerLine is the longest line read as a marker; a longer line is
	// reply text.
	maxMarkerLine = 1 << 20
	// commandProgressRunes is the longest progress line a command reports.
	commandProgressRunes = 200
)

// Command runs any program as the agent: the runner's Config.Agent set
// to a command line. This is the whole contract such a program has to meet.
//
// It runs once per message as bash -c Line in the person's workspace, as
// the agent user, in its own process group, with the agents' environment
// (HOME is the person's home).
//
// Its environment tells it its task id: TEXTSLASH_TASK_ID (and
// NOTION_TASK_ID, the same id by another name), a Notion page's task id for a job the
// page started, else the job id made safe for a file name (handover.TaskID).
//
// Its environment also holds TEXTSLASH_MODE (runner.ModeVar), the
// person's mode: ask, auto or plan. Modes are Claude Code's; what one
// means to the program is up to it (it cannot ask the person questions).
//
// Its stdin is the person's message and a newline; when they sent images, a
// last bracketed paragraph names them, as paths relative to the workspace
// (and says how many could not be fetched).
//
// Its stdout is the reply, cut at the runner's output cap, except for these
// marker lines, which are acted on and left out of it. A marker counts only
// at the very start of a line:
//
//	::progress:: <text>         send <text> to the person as progress (cut at 200 characters)
//	::approval::                ask the person to approve the changes (the whole line, spaces around it allowed)
//	SCREENSHOT_CAPTURED:<path>  an image for the reply, at <path> relative to the workspace
//	IMAGE_GENERATED|<path>|<caption>
//	                            an image for the reply with its caption, sent in a message
//	                            of its own; the caption is the rest of the line (| included,
//	                            at most 1,024 characters), a literal \n in it a line break;
//	                            optional (IMAGE_GENERATED|<path>)
//	TELEGRAM_IMAGE_GENERATED|<path>|<caption>
//	                            the same under its Telegram name, on every channel
//	FILE_CAPTURED:<path>        a file of any kind for the reply (a document), at <path>
//	                            relative to the workspace, at most 16 MiB
//
// Images it saves in tmp/ai_screenshots/ of the workspace (handover.DropDir) are
// sent with the reply too, then deleted: those named for no task, and
// those named for its task, <task id>_<timestamp>.png (or .jpg, .jpeg),
// modified at most 10 minutes before the run started or during it (older
// ones are deleted unsent). Files named for another task
// (<other>_<digits>.png) are left for that task's run, or deleted once
// older than 10 minutes.
//
// Its stderr is never shown to the person: its end goes into the error
// logged when the program fails.
//
// Exit code 0 means it answered; any other code is a failure, and the reply
// so far is still kept. Exit codes 126 and 127 are bash's for a program
// not executable or not found: the person is told the last line of stderr
// (a SetupError), since every message would fail the same way. When the run is cancelled or times out, its process
// group gets SIGTERM, then SIGKILL; whatever is still running in the group
// once the program has exited is killed.
type Command struct {
	// Line is the command line, run by bash -c in the workspace.
	Line string
}

// Run implements Agent. A non-zero exit or an ended ctx returns an error
// wrapping ErrFailed (and ctx's error) with the reply so far.
func (c Command) Run(ctx context.Context, r *Run) (Result, error) {
	cmd := r.Command(ctx, "bash", "-c", c.Line)
	cmd.Stdin = strings.NewReader(prompt(r) + "\n")
	stderr := &output.CappedBuffer{Max: stderrKeep}
	cmd.Stderr = stderr
	out := &commandOutput{reply: output.CappedBuffer{Max: r.OutputCap}, progress: r.Progress}
	if out.reply.Max <= 0 {
		out.reply.Max = defaultOutputCap
	}
	cmd.Stdout = out

	if err := cmd.Start(); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("command: %w", err)
	}
	_ = cmd.Wait() // the exit code is read from cmd.ProcessState
	sandbox.EndGroup(cmd)
	out.flush()

	res := Result{
		Text:      out.reply.String(),
		ExitCode:  sandbox.ExitCode(cmd),
		Truncated: out.reply.Truncated(),
		Approval:  out.approval,
		Handovers: out.handovers,
	}
	if res.Truncated {
		res.Text += "\n[output truncated]"
	}
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("command: %w: %w", ErrFailed, ctx.Err())
	case res.ExitCode != 0:
		if se := setupExit(res.ExitCode, stderr.Bytes()); se != nil {
			se.Err = fmt.Errorf("exit code %d", res.ExitCode)
			return res, fmt.Errorf("command: %w", se)
		}
		return res, fmt.Errorf("command: %w: exit code %d: %s", ErrFailed, res.ExitCode, output.StderrEnd(stderr.Bytes()))
	}
	return res, nil
}

// commandOutput reads a command's stdout: it acts on the marker lines and
// keeps every other line, as written, as the reply. Unlike output.LineWriter it
// keeps blank lines, and a line too long to be a marker goes to the reply
// whole.
type commandOutput struct {
	reply     output.CappedBuffer
	progress  func(string)
	approval  bool
	handovers []Handover

	line []byte // the current line so far, while it may be a marker
	long bool   // the current line is past maxMarkerLine: already reply text
}

func (o *commandOutput) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		switch {
		case o.long:
			o.reply.Write(part)
		case len(o.line)+len(part) > maxMarkerLine:
			o.long = true
			o.reply.Write(o.line)
			o.reply.Write(part)
			o.line = o.line[:0]
		default:
			o.line = append(o.line, part...)
		}
		if i < 0 {
			break
		}
		o.end("\n")
		p = p[i+1:]
	}
	return n, nil
}

// flush handles a last line that had no newline.
func (o *commandOutput) flush() {
	if len(o.line) > 0 {
		o.end("")
	}
}

// end handles the current line, which ended with nl.
func (o *commandOutput) end(nl string) {
	if o.long {
		o.long = false
		o.reply.Write([]byte(nl))
		return
	}
	line := string(o.line)
	o.line = o.line[:0]
	if !o.marker(line) {
		o.reply.Write([]byte(line + nl))
	}
}

// marker acts on line if it is a marker and says whether it was.
func (o *commandOutput) marker(line string) bool {
	if text, ok := strings.CutPrefix(line, "::progress::"); ok {
		if text = contract.CutRunes(strings.TrimSpace(text), commandProgressRunes); text != "" && o.progress != nil {
			o.progress(text)
		}
		return true
	}
	if h, ok := handoverLine(line); ok {
		if h.Path != "" {
			o.handovers = append(o.handovers, h)
		}
		return true
	}
	if strings.TrimSpace(line) == "::approval::" {
		o.approval = true
		return true
	}
	return false
}
