package dispatcher_test

import (
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
)

// What runs cost is counted once per run, whatever is read twice, and
// the cost keyword tells it.
func TestCostKeyword(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "alice")
	var ran []string
	for _, id := range []string{"r1", "r2"} {
		b.say(u, id, "echo "+id)
		ran = append(ran, id)
		b.waitRan(u, ran...)
		b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: id, Status: contract.StatusOK, Text: "ok",
			CostUSD: 0.25, InputTokens: 1000, OutputTokens: 200})
		b.waitState(u, contract.StateIdle, "")
	}
	// r2's done again, as after a crash: JetStream drops the same message
	// id, so send it under another.
	b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: "r2", Status: contract.StatusOK, CostUSD: 0.25, InputTokens: 1000}, "again")
	got := b.say(u, "c1", "Cost")
	if len(got) != 1 {
		t.Fatalf("cost: notices %q", got)
	}
	for _, want := range []string{
		"Today: $0.5000, 2,000 tokens in, 400 out in 2 runs.",
		"This week: $0.5000, 2,000 tokens in, 400 out in 2 runs.",
		"Last run: $0.2500, 1,000 tokens in",
	} {
		if !strings.Contains(got[0], want) {
			t.Errorf("cost: %q; want it to say %q", got[0], want)
		}
	}
	if jobs := b.jobsOf(u); len(jobs) != 2 || jobs[0].Budget != nil {
		t.Errorf("jobs %+v; want two, with no budget (none configured)", jobIDs(jobs))
	}
}

// Each job carries what is left of the tightest budget; once one is used
// up, the job carries nothing left (the runner refuses it), and the
// person's cost report says so.
func TestBudgets(t *testing.T) {
	b := newBench(t, dispatcher.Config{Budgets: dispatcher.Budgets{PersonDaily: 1, Monthly: 50}})
	u := user(t, "alice")
	b.say(u, "r1", "echo r1")
	b.waitRan(u, "r1")
	if got := b.job(u, "r1").Budget; got == nil || got.LeftUSD != 1 || got.Of != "your daily budget of $1.00" {
		t.Errorf("first job's budget %+v; want $1 left of the daily budget", got)
	}
	b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: "r1", Status: contract.StatusBudget, CostUSD: 1.2, InputTokens: 9})
	b.waitState(u, contract.StateIdle, "")
	b.say(u, "r2", "echo r2")
	b.waitRan(u, "r1", "r2")
	if got := b.job(u, "r2").Budget; got == nil || got.LeftUSD > 0 || !strings.Contains(got.Of, "daily budget of $1.00") {
		t.Errorf("second job's budget %+v; want nothing left of the daily budget", got)
	}
	b.finish(u, "r2", false)
	b.waitState(u, contract.StateIdle, "")
	got := b.say(u, "c1", "cost")
	if len(got) != 1 || !strings.Contains(got[0], "Daily budget of $1.00: $0.00 left.") || !strings.Contains(got[0], "Everybody's monthly budget of $50.00: $48.80 left.") {
		t.Errorf("cost: %q; want both budgets and what is left", got)
	}
}

// Runs that cost nothing (the shell agent's, a run that never reached the
// model) are runs all the same: cost counts them.
func TestCostCountsRunsThatCostNothing(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "alice")
	var ran []string
	for _, id := range []string{"r1", "r2", "r3"} {
		b.say(u, id, "echo "+id)
		ran = append(ran, id)
		b.waitRan(u, ran...)
		b.finish(u, id, false)
		b.waitState(u, contract.StateIdle, "")
	}
	// A job refused at a used-up budget is no run.
	b.say(u, "r4", "echo r4")
	b.waitRan(u, append(ran, "r4")...)
	b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: "r4", Status: contract.StatusBudget, Text: "Not run: your daily budget is used up."})
	b.waitState(u, contract.StateIdle, "")
	got := b.say(u, "c1", "cost")
	if len(got) != 1 || !strings.Contains(got[0], "Today: $0.0000, 0 tokens in, 0 out in 3 runs.") || !strings.Contains(got[0], "Last run: ") {
		t.Errorf("cost: %q; want today's 3 runs and the last", got)
	}
}

// A run is counted on what the costs bucket holds, whoever wrote it last:
// another dispatcher's run counted at the same entry meanwhile is kept.
func TestCostCountsOnAnotherDispatchersEntry(t *testing.T) {
	b := newBench(t, dispatcher.Config{Location: time.UTC})
	u := user(t, "alice")
	b.say(u, "r1", "echo r1")
	b.waitRan(u, "r1")
	b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: "r1", Status: contract.StatusOK, CostUSD: 0.25})
	b.waitState(u, contract.StateIdle, "")

	// Another dispatcher counts a run of $1 at alice's day.
	costs, err := b.js.KeyValue(t.Context(), contract.BucketCosts)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	day := contract.Cost{USD: 1.25, Runs: 2, Jobs: []string{"r1", "elsewhere"}, At: now}
	data, err := contract.Encode(&day)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := costs.Put(t.Context(), u.Key()+".d."+now.Format("2006-01-02"), data); err != nil {
		t.Fatal(err)
	}

	b.say(u, "r2", "echo r2")
	b.waitRan(u, "r1", "r2")
	b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: "r2", Status: contract.StatusOK, CostUSD: 0.25})
	b.waitState(u, contract.StateIdle, "")
	b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: "r2", Status: contract.StatusOK, CostUSD: 0.25}, "again")
	got := b.say(u, "c1", "cost")
	if want := "Today: $1.5000, 0 tokens in, 0 out in 3 runs."; len(got) != 1 || !strings.Contains(got[0], want) {
		t.Errorf("cost: %q; want it to say %q", got, want)
	}
}

// An agent that reports no cost in dollars (Gemini CLI reports tokens
// only, codex-acp neither) is not said to have cost $0: cost says what it
// does not report, and by whom.
func TestCostNotReportedByTheAgent(t *testing.T) {
	for _, c := range []struct {
		agent  string
		tokens int
		want   []string
	}{
		{contract.AgentGemini, 1000, []string{"Today: 1,000 tokens in, 200 out in 1 run.", "Cost in dollars: not reported by Gemini."}},
		{contract.AgentCodex, 0, []string{"Today: 1 run.", "Last run: 0s ago.", "Cost and tokens: not reported by Codex."}},
		{contract.AgentClaude, 1000, []string{"Today: $0.0000, 1,000 tokens in, 200 out in 1 run."}},
	} {
		t.Run(c.agent, func(t *testing.T) {
			b := newBench(t, dispatcher.Config{Agent: c.agent})
			u := user(t, "alice")
			b.say(u, "r1", "echo r1")
			b.waitRan(u, "r1")
			b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: "r1", Status: contract.StatusOK, Text: "ok",
				InputTokens: c.tokens, OutputTokens: c.tokens / 5})
			b.waitState(u, contract.StateIdle, "")
			got := b.say(u, "c1", "cost")
			if len(got) != 1 {
				t.Fatalf("cost: notices %q", got)
			}
			for _, want := range c.want {
				if !strings.Contains(got[0], want) {
					t.Errorf("cost: %q; want it to say %q", got[0], want)
				}
			}
			if c.agent == contract.AgentClaude && strings.Contains(got[0], "not reported") {
				t.Errorf("cost: %q; Claude Code reports its cost", got[0])
			}
		})
	}
}
