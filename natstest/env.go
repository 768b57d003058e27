package natstest

import (
	"errors"
	"fmt"
	"os"
	"os/user"
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

// Program is the path of a program tests run, from the environment
// variable envVar (scripts/setup sets it), else testdata/npm/node_modules/
// then fallback under the repository's root when fallback is set. The test
// is skipped when it is missing or not executable, or fails when $CI is
// set; what names the program in that message.
func Program(t testing.TB, envVar, fallback, what string) string {
	t.Helper()
	bin := os.Getenv(envVar)
	if bin == "" && fallback != "" {
		root, err := RepoRoot()
		if err != nil {
			Missing(t, "%s: %v", what, err)
		}
		bin = filepath.Join(root, "testdata", "npm", "node_modules", fallback)
	}
	if bin == "" {
		Missing(t, "%s: $%s is not set (source scripts/setup)", what, envVar)
	}
	fi, err := os.Stat(bin)
	if err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
		err = errors.New("not an executable file")
	}
	if err != nil {
		Missing(t, "%s %s: %v", what, bin, err)
	}
	return bin
}

// AgentUser is the OS user to run agents as when the test runs as root
// (Claude Code refuses --dangerously-skip-permissions as root, and
// textslash runs no agent as root): $TEXTSLASH_TEST_AGENT_USER, else
// "textslash-agent". It is "" when the test does not run as root. The
// test is skipped when the user does not exist, or fails when $CI is set.
func AgentUser(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return ""
	}
	name := os.Getenv("TEXTSLASH_TEST_AGENT_USER")
	if name == "" {
		name = "textslash-agent"
	}
	if _, err := user.Lookup(name); err != nil {
		Missing(t, "agent user: %v", err)
	}
	return name
}
