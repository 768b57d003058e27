package agent

import (
	"context"
	"os/exec"

	"github.com/textslash/textslash/contract"
)

// Agent turns one message into a reply by running a program in the user's
// workspace. Implementations: the shell (bash) and Claude Code.
type Agent interface {
	// Run executes the run's message. It returns when the program has exited.
	// A returned error means the agent could not be run at all or failed; the
	// Result still carries whatever partial text there was.
	Run(ctx context.Context, r *Run) (Result, error)
}

// Run is one job as an agent sees it.
type Run struct {
	Job contract.Job
	// Dir is the user's workspace: the program's working directory.
	Dir string
	// Attachments are the files the person sent with the message (voice
	// notes aside), as paths relative to Dir; Unfetched counts those that
	// could not be fetched.
	Attachments []string
	Unfetched   int
	// Spoken: Job.Text came (in part) from voice notes, transcribed.
	Spoken bool
	// SessionID is the agent session to continue (the user's last), or
	// empty for a new one.
	SessionID string
	// SessionTotal is SessionID's running total at its last result
	// (Result.SessionTotal of the run that kept it), nil when not known.
	// A Claude Code CLI that does not say what a result adds to the
	// session's total (2.1.197) is counted by it after a --resume.
	SessionTotal *Usage
	// Command prepares a program to run in Dir as the agent's OS user, in its
	// own process group, with the agent's environment; cancelling ctx ends
	// the whole group. Agents must start every program through it, and
	// call sandbox.EndGroup once it has exited.
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
	// Progress reports a short human line about what the agent is doing.
	Progress func(line string)
	// OutputCap is the most bytes of output an agent may keep.
	OutputCap int
	// Ask asks the person's permission for a tool use (Job.Mode ask) and
	// waits for the answer; nil denies every such use.
	Ask func(ctx context.Context, q Question) Answer
	// Steers are messages the person adds to the run while it works
	// ("btw …"); agents that cannot take them leave them there.
	Steers <-chan string
	// Warm, when set, is a live agent process kept between runs (Claude
	// Code's): the run goes to it when it fits the run, and it is left
	// running for the next one. Nil starts a process for the run alone.
	Warm *Warm
}

// Result is what an agent produced.
type Result struct {
	Text     string  // the reply
	ExitCode int     // the program's exit code
	CostUSD  float64 // what the model calls cost, when known
	// The model's tokens, when known: input (cache included) and output.
	InputTokens, OutputTokens int
	SessionID                 string // the agent's session, when it has one
	// SessionTotal is the session's running total as the run's last
	// result said it, for the next run continuing the session
	// (Run.SessionTotal); nil when there was no result.
	SessionTotal *Usage
	Truncated    bool // output went past OutputCap and was cut
	// Approval: the agent asked for the person's approval of its changes
	// (it printed ::approval::).
	Approval bool
	// Handovers are what the agent handed over by its marker lines
	// (handoverLine), in order: images, with their captions, and files;
	// the runner checks them.
	Handovers []Handover
	// Warm: the run was served by a live process kept from an earlier run
	// (Run.Warm), not by one started for it.
	Warm bool
}

// KeepsWarm says whether a's process may be kept between runs (Run.Warm):
// Claude Code's and an ACP agent's.
func KeepsWarm(a Agent) bool {
	switch a.(type) {
	case *Claude, *ACP:
		return true
	}
	return false
}

// Asks says whether a asks the person's permission (Run.Ask) while it
// works: Claude Code and the ACP agents do.
func Asks(a Agent) bool { return KeepsWarm(a) }
