package agent

import "errors"

// ErrFailed means the agent ran but did not finish its turn: the model
// API failed, the CLI reported an error, or it exited without a result.
// The Result returned with it carries the agent's own (raw) text.
var ErrFailed = errors.New("agent failed")

// ErrBudget means the run stopped because it reached Job.Budget; the
// Result carries what the agent had said so far.
var ErrBudget = errors.New("budget reached")

// errNoCLI means the Claude Code CLI was not found among a warm
// process's processes, so its tools cannot be told from it.
var errNoCLI = errors.New("the CLI is not among its processes")

// SetupError means the agent cannot run as this machine has it set up:
// its program is not found or not executable, or the model API refuses
// its credentials (none, or a key it does not take). Every run fails the
// same way until the operator fixes it, so Reason, one line of what the
// program or shell said, is for the person too. It is ErrFailed as well.
type SetupError struct {
	Reason string
	Fix    string // how the operator fixes it, when known
	Err    error  // the cause, if any
}

func (e *SetupError) Error() string {
	if e.Err != nil {
		return "agent not set up: " + e.Reason + ": " + e.Err.Error()
	}
	return "agent not set up: " + e.Reason
}

// Unwrap gives ErrFailed, and the cause.
func (e *SetupError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrFailed}
	}
	return []error{ErrFailed, e.Err}
}
