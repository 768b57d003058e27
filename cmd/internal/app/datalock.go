package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// errDataInUse: another textslash holds the data directory.
var errDataInUse = errors.New("in use by another textslash")

// lockData takes the data directory dir for this process: an exclusive
// flock on dir/lock, which says the holder's pid. Two processes on one data
// directory would write one JetStream store; a second is refused at once.
// The lock is held until the file is closed or the process ends, however
// it ends (the kernel lets go of it then).
func lockData(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data directory (TEXTSLASH_DATA): %w", err)
	}
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data directory (TEXTSLASH_DATA): %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		holder := ""
		if pid, _ := os.ReadFile(path); len(strings.TrimSpace(string(pid))) > 0 {
			holder = " (pid " + strings.TrimSpace(string(pid)) + ")"
		}
		return nil, fmt.Errorf("%s is %w%s: stop it, or give this one other data (TEXTSLASH_DATA)", dir, errDataInUse, holder)
	}
	// The pid is a courtesy to the next one refused: it may go unwritten.
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
