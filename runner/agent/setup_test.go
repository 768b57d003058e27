package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/sandbox"
)

// A command agent that cannot run as set up (a program not found, one
// not executable) fails with a SetupError whose reason is what bash said.
func TestCommandSetupFailure(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"not found", "true && claud", "claud: command not found"},
		{"not executable", "./agent.sh", "Permission denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := commandRun(t, "hi")
			if err := os.WriteFile(filepath.Join(r.Dir, "agent.sh"), []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Command{Line: tt.line}.Run(t.Context(), r)
			se, ok := errors.AsType[*SetupError](err)
			if !ok || !errors.Is(err, ErrFailed) {
				t.Fatalf("error %v; want a SetupError that is ErrFailed", err)
			}
			if !strings.Contains(se.Reason, tt.want) || strings.Contains(se.Reason, "\n") {
				t.Errorf("reason %q; want one line saying %q", se.Reason, tt.want)
			}
		})
	}
	// A program that fails on its own is not a set-up failure.
	r, _ := commandRun(t, "hi")
	if _, err := (Command{Line: "exit 3"}).Run(t.Context(), r); !errors.Is(err, ErrFailed) {
		t.Fatalf("exit 3: error %v; want ErrFailed", err)
	} else if _, ok := errors.AsType[*SetupError](err); ok {
		t.Errorf("exit 3: error %v; want no SetupError", err)
	}
}

// Claude Code that cannot authenticate (no credentials, or a key the API
// refuses) fails with a SetupError whose reason is the CLI's line.
func TestClaudeAuthFailure(t *testing.T) {
	bin := claudetest.Binary(t)
	tests := []struct {
		name, key, want string
	}{
		{"not logged in", "", "Not logged in"},
		{"key refused", "sk-ant-refused", "Invalid API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := claudetest.NewModel(t, claudetest.APIError(401, "invalid x-api-key"))
			claudetest.Setenv(t, m)
			t.Setenv("ANTHROPIC_API_KEY", tt.key)
			r, _ := claudeRun(t, "hello")
			ctx, cancel := context.WithTimeout(t.Context(), claudeTimeout)
			defer cancel()
			_, err := (&Claude{Bin: bin}).Run(ctx, r)
			se, ok := errors.AsType[*SetupError](err)
			if !ok || !errors.Is(err, ErrFailed) {
				t.Fatalf("error %v; want a SetupError that is ErrFailed", err)
			}
			if !strings.Contains(se.Reason, tt.want) {
				t.Errorf("reason %q; want %q", se.Reason, tt.want)
			}
		})
	}
}

// CheckAuth asks the CLI, without a model call, whether a run could
// authenticate: with an API key or an OAuth token in the environment it
// can, with neither (and a home without credentials) it cannot.
func TestClaudeCheckAuth(t *testing.T) {
	bin := claudetest.Binary(t)
	u, err := sandbox.LookupUser(claudetest.AgentUser(t))
	if err != nil {
		t.Fatal(err)
	}
	m := claudetest.NewModel(t)
	tests := []struct {
		name, key, token string
		ok               bool
	}{
		{"api key", "sk-ant-x", "", true},
		{"oauth token", "", "sk-ant-oat01-x", true},
		{"neither", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claudetest.Setenv(t, m)
			t.Setenv("ANTHROPIC_API_KEY", tt.key)
			t.Setenv("CLAUDE_CODE_OAUTH_TOKEN", tt.token)
			root := t.TempDir()
			// t.TempDir and its parent are 0700 root: let the agent user through.
			for _, d := range []string{filepath.Dir(root), root} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			home := filepath.Join(root, "home") // never made: no credentials
			err := (&Claude{Bin: bin}).CheckAuth(t.Context(), sandbox.CommandFunc("/", home, u, true))
			if tt.ok && err != nil {
				t.Errorf("CheckAuth: %v; want nil", err)
			}
			if !tt.ok {
				if se, ok := errors.AsType[*SetupError](err); !ok || !strings.Contains(se.Reason, "Not logged in") {
					t.Errorf("CheckAuth: %v; want a SetupError saying Not logged in", err)
				}
			}
			if n := len(m.Requests()); n != 0 {
				t.Errorf("model got %d requests; want none", n)
			}
		})
	}
}

// A Claude Code binary that is missing or not executable fails the run
// with a SetupError naming it.
func TestClaudeBinarySetupFailure(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "claude")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bin := range []string{notExec, filepath.Join(dir, "no-claude")} {
		r, _ := claudeRun(t, "hello")
		_, err := (&Claude{Bin: bin}).Run(t.Context(), r)
		if se, ok := errors.AsType[*SetupError](err); !ok || !strings.Contains(se.Reason, bin) {
			t.Errorf("%s: error %v; want a SetupError naming it", bin, err)
		}
	}
}
