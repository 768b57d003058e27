package main

import (
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
)

// Budgets with the real Claude Code CLI: a run within the daily budget
// replies (with its cost, TEXTSLASH_SHOW_COST); one that reaches it is
// stopped with what it did so far; the next is refused; cost tells.
func TestBudgetEndToEnd(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.Text("First answer."),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo one >> count.txt"}),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo two >> count.txt"}),
		claudetest.Text("never reached"),
	)
	// One scripted call costs $0.00016 at the CLI's list price.
	inst := startClaude(t, model, "TEXTSLASH_BUDGET_PERSON_DAILY=0.0003", "TEXTSLASH_SHOW_COST=true")
	c := inst.newChat(t)
	events := c.events(t.Context())

	first := c.ask(events, "hello")
	if first.Status != contract.StatusOK || !strings.HasPrefix(first.Text, "First answer.\n\n(This run: $0.0") || first.CostUSD <= 0 || first.InputTokens <= 0 {
		t.Errorf("first run: %q (%s, $%v, %d tokens in); want the reply and its cost", first.Text, first.Status, first.CostUSD, first.InputTokens)
	}
	idle(t, events)
	second := c.ask(events, "count")
	if second.Status != contract.StatusBudget || !strings.Contains(second.Text, "This run was stopped: it reached your daily budget of $0.0003.") {
		t.Errorf("second run: %q (%s); want it stopped at the budget", second.Text, second.Status)
	}
	idle(t, events)
	third := c.ask(events, "more work")
	if third.Status != contract.StatusBudget || !strings.HasPrefix(third.Text, "Not run: your daily budget of $0.0003 is used up.") {
		t.Errorf("third run: %q (%s); want it refused", third.Text, third.Status)
	}
	if n := model.Turns(); n != 2 {
		t.Errorf("the model answered %d calls; want 2 (the refused run asks nothing)", n)
	}
	idle(t, events)
	c.send("cost")
	report := notice(t, events, "Today: $0.000")
	if !strings.Contains(report.Text, "in 2 runs.") || !strings.Contains(report.Text, "Daily budget of $0.0003: $0.00 left.") {
		t.Errorf("cost report %q; want two runs counted and nothing left", report.Text)
	}
}
