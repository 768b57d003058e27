package workspace

import "fmt"

// Refusal is a job refused for a reason the person is told as is: a
// project that is not there, a clone refused, a worktree that could not
// be made. Pick, OpenWorktree and the Clone agent return one; any other
// error they return is the runner's, not for the person.
type Refusal struct{ Text string }

func (e *Refusal) Error() string { return e.Text }

// refuse is a Refusal of the text format makes with args.
func refuse(format string, args ...any) error {
	return &Refusal{Text: fmt.Sprintf(format, args...)}
}
