package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/sandbox"
)

// claudeTimeout bounds one CLI run so a hung CLI can't hang the suite.
const claudeTimeout = 90 * time.Second

// claudeRun prepares a fresh workspace and a Run of text in it, as the
// agent user when the test runs as root. Set the CLI's environment
// (claudetest.Setenv) before calling it: the Run's environment is taken now.
func claudeRun(t testing.TB, text string) (r *Run, progress func() []string) {
	t.Helper()
	u, err := sandbox.LookupUser(claudetest.AgentUser(t))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	// t.TempDir and its parent are 0700 root: let the agent user through.
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	if err := sandbox.PrepareWorkspace(dir, home, u); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	r = &Run{
		Job:     contract.Job{V: 1, ID: "job-1", Text: text, At: time.Now(), Mode: contract.ModeAuto},
		Dir:     dir,
		Command: sandbox.CommandFunc(dir, home, u, true),
		Progress: func(s string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, s)
		},
		OutputCap: 64 << 10,
	}
	return r, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(lines)
	}
}

func TestClaudeRunsTools(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]string{"command": "echo hi > hello.txt", "description": "write a file"}),
		claudetest.Text("All done: wrote hello.txt"),
	)
	claudetest.Setenv(t, m)
	r, progress := claudeRun(t, "please write hello.txt")
	ctx, cancel := context.WithTimeout(t.Context(), claudeTimeout)
	defer cancel()

	const prompt = "The user reads your replies on a phone."
	start := time.Now()
	res, err := (&Claude{Bin: bin, AppendSystemPrompt: prompt}).Run(ctx, r)
	t.Logf("claude run took %v", time.Since(start))
	if err != nil {
		t.Fatalf("Run: %v (result %+v)", err, res)
	}

	if want := "Running `echo hi > hello.txt`"; !slices.Contains(progress(), want) {
		t.Errorf("progress = %q; want it to contain %q", progress(), want)
	}
	b, err := os.ReadFile(filepath.Join(r.Dir, "hello.txt"))
	if err != nil {
		t.Errorf("the tool did not run: %v", err)
	} else if got := strings.TrimSpace(string(b)); got != "hi" {
		t.Errorf("hello.txt = %q; want %q", got, "hi")
	}
	if want := "All done: wrote hello.txt"; res.Text != want {
		t.Errorf("Text = %q; want %q", res.Text, want)
	}
	if res.SessionID == "" {
		t.Errorf("SessionID is empty; want the CLI's session")
	}
	if res.ExitCode != 0 || res.Truncated {
		t.Errorf("ExitCode, Truncated = %d, %t; want 0, false", res.ExitCode, res.Truncated)
	}

	reqs := m.MainRequests()
	if len(reqs) != 2 {
		t.Fatalf("model got %d main requests; want 2", len(reqs))
	}
	if !bytes.Contains(reqs[0].Body, []byte(prompt)) {
		t.Errorf("the model's first request does not carry the appended system prompt %q", prompt)
	}
	results := reqs[1].ToolResults()
	if len(results) != 1 || results[0].IsError || !strings.HasPrefix(results[0].ToolUseID, "toolu_") {
		t.Errorf("second request's tool results = %+v; want one successful tool_result", results)
	}
}

func TestClaudeAPIError(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t, claudetest.APIError(500, "server exploded"))
	claudetest.Setenv(t, m)
	r, progress := claudeRun(t, "hello")
	ctx, cancel := context.WithTimeout(t.Context(), claudeTimeout)
	defer cancel()

	res, err := (&Claude{Bin: bin}).Run(ctx, r)
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("Run error = %v; want ErrFailed", err)
	}
	t.Logf("Run error: %v", err)
	// The raw text: the friendly one is chosen elsewhere.
	if !strings.Contains(res.Text, "500") || !strings.Contains(res.Text, "server exploded") {
		t.Errorf("Text = %q; want the CLI's raw API error", res.Text)
	}
	if res.ExitCode == 0 {
		t.Errorf("ExitCode = 0; want non-zero")
	}
	if len(progress()) != 0 {
		t.Errorf("progress = %q; want none", progress())
	}
	if n := len(m.MainRequests()); n == 0 {
		t.Errorf("model got no main requests; want at least one")
	}
}

func TestClaudeNoResult(t *testing.T) {
	// A CLI that exits without a result line (a crash, a refused flag):
	// the run fails and the error quotes its stderr.
	bin := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'Error: Input must be provided' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	r, _ := claudeRun(t, "hello")
	ctx, cancel := context.WithTimeout(t.Context(), claudeTimeout)
	defer cancel()

	res, err := (&Claude{Bin: bin}).Run(ctx, r)
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("Run error = %v; want ErrFailed", err)
	}
	t.Logf("Run error: %v", err)
	if !strings.Contains(err.Error(), "without a result") || !strings.Contains(err.Error(), "Input must be provided") {
		t.Errorf("Run error = %q; want it to quote the CLI's stderr", err)
	}
	if res.ExitCode != 1 {
		t.Errorf("ExitCode = %d; want 1", res.ExitCode)
	}
}

func TestClaudeMissingBinary(t *testing.T) {
	r, _ := claudeRun(t, "hello")
	res, err := (&Claude{Bin: filepath.Join(t.TempDir(), "no-claude")}).Run(t.Context(), r)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Run error = %v; want os.ErrNotExist", err)
	}
	if res.ExitCode != -1 {
		t.Errorf("ExitCode = %d; want -1", res.ExitCode)
	}
}

// A session that cannot be resumed (its files are gone) does not fail the
// person's message: the run starts a new session.
func TestClaudeLostSessionStartsAnew(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t, claudetest.Text("A fresh start."))
	claudetest.Setenv(t, m)
	r, _ := claudeRun(t, "hello again")
	r.SessionID = "4f1c2b8e-0000-4000-8000-000000000000"
	ctx, cancel := context.WithTimeout(t.Context(), claudeTimeout)
	defer cancel()
	res, err := (&Claude{Bin: bin}).Run(ctx, r)
	if err != nil {
		t.Fatalf("Run: %v (result %+v)", err, res)
	}
	if res.Text != "A fresh start." || res.SessionID == "" || res.SessionID == r.SessionID {
		t.Errorf("result %+v; want the reply in a new session", res)
	}
}

// Cancelling a run while Claude Code's Bash tool runs `sleep 600` ends
// every process of the run: the CLI and the tool's shell and sleep, even
// if the CLI puts the tool in a process group of its own.
func TestClaudeCancelDuringTool(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]string{"command": "echo $$ > tool.pid; sleep 600", "description": "wait"}),
		claudetest.Text("never"),
	)
	claudetest.Setenv(t, m)
	r, _ := claudeRun(t, "wait a long time")
	ctx, cancel := context.WithCancel(t.Context())
	type ran struct {
		res Result
		err error
	}
	ended := make(chan ran, 1)
	go func() {
		res, err := (&Claude{Bin: bin}).Run(ctx, r)
		ended <- ran{res, err}
	}()
	toolPID := readPIDWithin(t, filepath.Join(r.Dir, "tool.pid"), claudeTimeout)
	pgid, err := syscall.Getpgid(toolPID)
	if err != nil {
		t.Fatalf("the tool's shell: %v", err)
	}
	killGroupAtEnd(t, pgid)
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", toolPID)); err == nil {
		t.Logf("tool shell stat: %s", stat)
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pgid)); err == nil {
		t.Logf("group leader stat: %s", stat)
	}
	cancel()
	sent := time.Now()
	got := <-ended
	t.Logf("Run returned %v after cancel", time.Since(sent))
	if !errors.Is(got.err, context.Canceled) {
		t.Errorf("Run: %v; want it to wrap context.Canceled", got.err)
	}
	for {
		left := groupAlive(t, pgid)
		gone := syscall.Kill(toolPID, 0) != nil && len(left) == 0
		if gone && time.Since(sent) <= time.Second {
			t.Logf("every process of the run was gone %v after cancel", time.Since(sent).Round(time.Millisecond))
			break
		}
		if time.Since(sent) > time.Second {
			t.Fatalf("1s after cancel: the tool's shell (%d) or its group still alive: %q", toolPID, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
