package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
)

// The real Claude Code CLI, run by textslash as an unprivileged user,
// against a scripted model: the scripted tool call really runs in the
// user's workspace and shows as progress; the scripted text is the reply.
func TestClaudeCodeEndToEnd(t *testing.T) {
	bin := claudetest.Binary(t)
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "echo hi > hello.txt", "description": "write a file"}),
		claudetest.Text("All done: wrote hello.txt"),
	)
	env := append([]string{"TEXTSLASH_AGENT=claude", "TEXTSLASH_CLAUDE_BIN=" + bin}, claudetest.Env(model)...)
	if u := claudetest.AgentUser(t); u != "" {
		env = append(env, "TEXTSLASH_AGENT_USER="+u)
	}
	inst := startServe(t, env...)
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)

	id := c.send("write hi into hello.txt")
	var progress []string
	done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool {
		if ev.Kind == "progress" && ev.Event.JobID == id {
			progress = append(progress, ev.Event.Text)
		}
		return ev.Kind == "done"
	})
	if done.Event.Status != contract.StatusOK || done.Event.Text != "All done: wrote hello.txt" {
		t.Errorf("done = %q (%s); want the scripted text, ok", done.Event.Text, done.Event.Status)
	}
	if want := "Running `echo hi > hello.txt`"; len(progress) == 0 || progress[0] != want {
		t.Errorf("progress %q; want %q first", progress, want)
	}
	got, err := os.ReadFile(filepath.Join(inst.Data, "workspaces", c.User.Key(), "hello.txt"))
	if err != nil || strings.TrimSpace(string(got)) != "hi" {
		t.Errorf("hello.txt = %q, %v; want hi (the tool ran in the workspace)", got, err)
	}
	if results := model.MainRequests(); len(results) < 2 || len(results[len(results)-1].ToolResults()) == 0 {
		t.Errorf("the model did not receive the tool's result (%d main requests)", len(results))
	}
}
