package agent

import (
	"context"
	"errors"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
)

// A run reaching its budget stops at once, with what it said so far; a
// run within it reports its cost and tokens.
func TestClaudeBudget(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t,
		claudetest.Text("Cheap answer."),
		claudetest.ToolUse("Bash", map[string]string{"command": "echo one >> count.txt"}),
		claudetest.ToolUse("Bash", map[string]string{"command": "echo two >> count.txt"}),
		claudetest.Text("never reached"),
	)
	claudetest.Setenv(t, m)
	ctx, cancel := context.WithTimeout(t.Context(), claudeTimeout)
	defer cancel()

	r, _ := claudeRun(t, "hello")
	r.Job.Budget = &contract.Budget{LeftUSD: 5, Of: "your daily budget of $5.00"}
	res, err := (&Claude{Bin: bin}).Run(ctx, r)
	if err != nil || res.Text != "Cheap answer." {
		t.Fatalf("within budget: %q, %v", res.Text, err)
	}
	if res.CostUSD <= 0 || res.InputTokens <= 0 || res.OutputTokens <= 0 {
		t.Errorf("cost %v, tokens %d in, %d out; want all counted", res.CostUSD, res.InputTokens, res.OutputTokens)
	}

	r, _ = claudeRun(t, "count")
	r.Job.Budget = &contract.Budget{LeftUSD: 0.0000001, Of: "your daily budget of $5.00"}
	res, err = (&Claude{Bin: bin}).Run(ctx, r)
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("over budget: error %v; want ErrBudget", err)
	}
	if m.Turns() != 2 {
		t.Errorf("the model answered %d turns; want the run stopped after the first call over budget", m.Turns())
	}
	if res.CostUSD <= 0 {
		t.Errorf("cost %v; want what the stopped run cost", res.CostUSD)
	}
}
