package main

import (
	"math"
	"strings"
	"testing"
	"time"

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
	// One scripted call costs $0.00014 at the CLI's list price.
	inst := startClaude(t, model, "TEXTSLASH_BUDGET_PERSON_DAILY=0.0002", "TEXTSLASH_SHOW_COST=true")
	c := inst.newChat(t)
	events := c.events(t.Context())

	first := c.ask(events, "hello")
	if first.Status != contract.StatusOK || !strings.HasPrefix(first.Text, "First answer.\n\n(This run: $0.0") || first.CostUSD <= 0 || first.InputTokens <= 0 {
		t.Errorf("first run: %q (%s, $%v, %d tokens in); want the reply and its cost", first.Text, first.Status, first.CostUSD, first.InputTokens)
	}
	idle(t, events)
	second := c.ask(events, "count")
	if second.Status != contract.StatusBudget || !strings.Contains(second.Text, "This run was stopped: it reached your daily budget of $0.0002.") {
		t.Errorf("second run: %q (%s); want it stopped at the budget", second.Text, second.Status)
	}
	idle(t, events)
	third := c.ask(events, "more work")
	if third.Status != contract.StatusBudget || !strings.HasPrefix(third.Text, "Not run: your daily budget of $0.0002 is used up.") {
		t.Errorf("third run: %q (%s); want it refused", third.Text, third.Status)
	}
	if n := model.Turns(); n != 2 {
		t.Errorf("the model answered %d calls; want 2 (the refused run asks nothing)", n)
	}
	idle(t, events)
	c.send("cost")
	report := notice(t, events, "Today: $0.000")
	if !strings.Contains(report.Text, "in 2 runs.") || !strings.Contains(report.Text, "Daily budget of $0.0002: $0.00 left.") {
		t.Errorf("cost report %q; want two runs counted and nothing left", report.Text)
	}
}

// Each run counts what the model did in it, once: in one session over
// the web chat, through ask mode (questions answered yes and always),
// plan mode, go and auto mode, every run's tokens are its requests times
// the scripted model's usage per request, and its cost the same number of
// requests' worth; cost's day is their sum. (Claude Code resumes a
// session with the cost and tokens its transcript saved: those are not
// the run's.)
func TestCostPerRunInOneSession(t *testing.T) {
	model := claudetest.NewModel(t,
		// ask: one question, yes
		claudetest.ToolUse("Bash", map[string]any{"command": "echo one > one.txt"}),
		claudetest.Text("Made one."),
		// ask: always, then the same command again without a question
		claudetest.ToolUse("Bash", map[string]any{"command": "echo two >> two.txt"}),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo two >> two.txt"}),
		claudetest.Text("Made two twice."),
		// plan
		claudetest.ToolUse("ExitPlanMode", map[string]any{"plan": "1. Write plan.txt"}),
		claudetest.Text("Plan ready."),
		// go, in the usual mode (ask): a tool that needs no question
		claudetest.ToolUse("Glob", map[string]any{"pattern": "*.txt"}),
		claudetest.Text("Carried out the plan."),
		// auto
		claudetest.Text("Hello."),
	)
	inst := startClaude(t, model, "TEXTSLASH_DEFAULT_MODE=ask", "TEXTSLASH_SHOW_COST=true")
	c := inst.newChat(t)
	events := c.events(t.Context())
	messages := func() int {
		n := 0
		for _, r := range model.Requests() {
			if r.Path == "/v1/messages" {
				n++
			}
		}
		return n
	}

	var perRequest float64 // USD, from the first run
	var want contract.Cost
	run := func(text string, answers ...string) {
		t.Helper()
		before := messages()
		id := c.send(text)
		for _, a := range answers {
			question(t, events)
			c.send(a)
		}
		done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id }).Event
		idle(t, events)
		reqs := messages() - before
		if perRequest == 0 {
			perRequest = done.CostUSD / float64(reqs)
		}
		got := contract.Cost{USD: done.CostUSD, InputTokens: done.InputTokens, OutputTokens: done.OutputTokens}
		run := contract.Cost{USD: perRequest * float64(reqs), InputTokens: reqs * claudetest.InputTokens, OutputTokens: reqs * claudetest.OutputTokens}
		if got.String() != run.String() || math.Abs(got.USD-run.USD) > 1e-9 || perRequest <= 0 {
			t.Errorf("%q: the run counted %s; want %s (%d requests)", text, got, run, reqs)
		}
		if line := "(This run: " + run.String() + ".)"; !strings.HasSuffix(done.Text, line) {
			t.Errorf("%q: reply %q; want it to end with %q", text, done.Text, line)
		}
		want.USD, want.InputTokens, want.OutputTokens = want.USD+run.USD, want.InputTokens+run.InputTokens, want.OutputTokens+run.OutputTokens
	}
	run("make one", "yes")
	run("make two", "always")
	c.send("mode plan")
	notice(t, events, "Mode plan")
	run("plan the build")
	run("go")
	c.send("mode auto")
	notice(t, events, "Mode auto")
	run("hello")

	c.send("cost")
	report := notice(t, events, "Today: ")
	if line := "Today: " + want.String() + " in 5 runs."; !strings.Contains(report.Text, line) {
		t.Errorf("cost report %q; want %q", report.Text, line)
	}
}
