package sandbox

import (
	"errors"
	"fmt"
)

// ErrNoSandbox means runs cannot be sandboxed here.
var ErrNoSandbox = errors.New("cannot sandbox runs")

// errNotRegular: a name that is not a regular file (a FIFO, a device, a
// directory) where one was to be read.
var errNotRegular = errors.New("not a regular file")

// LimitError is a run ended by one of its limits.
type LimitError struct {
	What string // "memory" or "processes"
	Used string
	Max  string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("run reached its %s limit (%s; used %s)", e.What, e.Max, e.Used)
}

// Message is what the person reads.
func (e *LimitError) Message() string {
	return fmt.Sprintf("This run was stopped: it reached its limit of %s %s (it used %s).", e.Max, e.What, e.Used)
}

// ErrNoHome means runs cannot have homes here; each run has a sandbox of
// its own instead.
var ErrNoHome = errors.New("cannot keep homes")

// ErrNoCommand: a background process asked for without a command.
var ErrNoCommand = errors.New("no command")

// ErrHomeGone: the home was taken down.
var ErrHomeGone = errors.New("the home was taken down")

// ErrOutsideWorkspace: a background process asked for from a directory
// outside the workspace.
var ErrOutsideWorkspace = errors.New("is outside your workspace")
