package agent

import "errors"

// ErrFailed means the agent ran but did not finish its turn: the model
// API failed, the CLI reported an error, or it exited without a result.
// The Result returned with it carries the agent's own (raw) text.
var ErrFailed = errors.New("agent failed")

// ErrBudget means the run stopped because it reached Job.Budget; the
// Result carries what the agent had said so far.
var ErrBudget = errors.New("budget reached")
