package natstest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Missing skips the test for want of a tool it needs (format and args say
// which and why), or fails it when $CI is set: there scripts/test has
// installed every tool, so one missing is a broken setup, not a reason to
// skip.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...) + " (scripts/test installs it)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// RepoRoot walks up from the working directory to the one holding go.work:
// the repository's root, where testdata/npm keeps the npm tools tests run.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory")
		}
		dir = parent
	}
}
