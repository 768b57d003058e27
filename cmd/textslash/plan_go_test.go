package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/claudetest"
)

// go carries a plan out in the person's usual mode when that is ask: the
// resumed session is not left in plan mode (where Claude Code refuses
// commands without asking), so the command comes to the person first.
func TestPlanThenGoAsks(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.Text("1. Write plan.txt"),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo built > plan.txt"}),
		claudetest.Text("Built."),
	)
	inst := startClaude(t, model)
	c := inst.newChat(t)
	events := c.events(t.Context())
	ws := filepath.Join(inst.Data, "workspaces", c.User.Key())

	c.send("mode ask")
	notice(t, events, "Mode ask")
	c.send("mode plan")
	notice(t, events, "Mode plan")
	if reply := c.ask(events, "plan the build"); !strings.Contains(reply.Text, "1. Write plan.txt") {
		t.Fatalf("plan reply %q; want the plan", reply.Text)
	}
	id := c.send("go")
	if q := question(t, events); !strings.Contains(q.Text, "echo built > plan.txt") {
		t.Fatalf("question %q; want the plan's command asked about", q.Text)
	}
	c.send("yes")
	done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id }).Event
	if done.Text != "Built." {
		t.Errorf("go: reply %q; want Built.", done.Text)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "plan.txt")); err != nil || string(b) != "built\n" {
		t.Errorf("plan.txt = %q, %v; want built (allowed after the question)", b, err)
	}
}
