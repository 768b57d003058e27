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
