package disk

import "errors"

// ErrUnsupported means disks cannot be bounded here: not root, no loop
// devices, no mkfs.ext4 (Open).
var ErrUnsupported = errors.New("disks cannot be bounded here")

// ErrTooFull means what a person already had does not fit in their new
// disk (Mount): it stays where it was, unbounded.
var ErrTooFull = errors.New("what is there does not fit in the disk")
