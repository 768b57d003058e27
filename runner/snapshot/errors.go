package snapshot

import "errors"

var (
	// ErrInvalid: an archive that is not a snapshot, or one trying to
	// write outside the workspace or home; nothing is written outside.
	// Restore returns it.
	ErrInvalid = errors.New("not a valid snapshot")
	// ErrNotEmpty: a snapshot is restored into an empty or missing
	// workspace only. Restore returns it.
	ErrNotEmpty = errors.New("the workspace to restore into is not empty")
)
