package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/openaitest"
	"github.com/textslash/textslash/runner/sandbox"
)

// The ACP agent, tested with each real agent of acpKits.

func acpCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(testLog(t), claudeTimeout)
	t.Cleanup(cancel)
	return ctx
}

// asked answers every question with the next of answers, and keeps them.
type asked struct {
	mu      sync.Mutex
	answers []string
	qs      []Question
}

func (a *asked) ask(_ context.Context, q Question) Answer {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.qs = append(a.qs, q)
	if len(a.answers) == 0 {
		return Answer{Decision: contract.AnswerDeny}
	}
	d := a.answers[0]
	a.answers = a.answers[1:]
	switch d {
	case contract.AnswerAllow, contract.AnswerAlways, contract.AnswerDeny:
		return Answer{Decision: d}
	}
	return Answer{Decision: contract.AnswerDeny, Text: d} // a no with the person's words
}

func TestACPRunsTools(t *testing.T) {
	eachKit(t, func(t *testing.T, k acpKit) {
		m := k.start(t, shellTurn("printf hi > hello.txt"), textTurn("All done: wrote hello.txt"))
		r, progress := m.run("please write hello.txt", contract.ModeAuto)
		res, err := m.agent.Run(acpCtx(t), r)
		if err != nil {
			t.Fatalf("run: %v (%q)", err, res.Text)
		}
		if res.Text != "All done: wrote hello.txt" {
			t.Errorf("reply %q", res.Text)
		}
		if b, err := os.ReadFile(filepath.Join(r.Dir, "hello.txt")); err != nil || string(b) != "hi" {
			t.Errorf("hello.txt: %q, %v", b, err)
		}
		if got := progress(); len(got) == 0 || got[0] != "Running `printf hi > hello.txt`" {
			t.Errorf("progress %q", got)
		}
		if res.SessionID == "" {
			t.Error("no session id")
		}
		// Gemini reports the model's tokens (in the prompt response's
		// _meta), opencode tokens and cost; codex-acp 0.16 only how full
		// the context is.
		if got := res.InputTokens > 0 && res.OutputTokens > 0; got != k.tokens || (res.CostUSD > 0) != k.cost {
			t.Errorf("tokens %d in, %d out, $%v; want tokens reported: %v, cost: %v", res.InputTokens, res.OutputTokens, res.CostUSD, k.tokens, k.cost)
		}
		// The first prompt of a session carries textslash's system prompt.
		if p := m.prompt(0); !strings.Contains(p, "textslash shot") || !strings.Contains(p, "please write hello.txt") {
			t.Errorf("first prompt %q", p)
		}
	})
}

// A no with the person's words ("use echo instead") reaches the agent
// as they do Claude Code, in the same run: the model is sent them, and
// the run's reply is the agent's answer to them.
func TestACPTellsTheNo(t *testing.T) {
	eachKit(t, func(t *testing.T, k acpKit) {
		script := []kitTurn{shellTurn("printf hi > hello.txt")}
		if k.deniedAsksModel {
			script = append(script, textTurn("Not done"))
		}
		m := k.start(t, append(script, textTurn("Using echo, then"))...)
		r, _ := m.run("write hello.txt", contract.ModeAsk)
		who := &asked{answers: []string{"use echo instead"}}
		r.Ask = who.ask
		res, err := m.agent.Run(acpCtx(t), r)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "hello.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("hello.txt after a no: %v", err)
		}
		last := m.requests() - 1
		if p := m.prompt(last); !strings.Contains(p, "use echo instead") {
			t.Errorf("the model's last prompt %q; want the person's words", p)
		}
		if res.Text != "Using echo, then" {
			t.Errorf("reply %q; want the answer to the person's words", res.Text)
		}
	})
}

// In ask mode the person is asked, by the question Claude Code's Bash
// would get; a no keeps the command from running, an always on the same
// warm agent lets it run.
func TestACPAsks(t *testing.T) {
	eachKit(t, func(t *testing.T, k acpKit) {
		script := []kitTurn{shellTurn("printf hi > hello.txt")}
		if k.deniedAsksModel {
			script = append(script, textTurn("Not done"))
		}
		m := k.start(t, append(script, shellTurn("printf hi > hello.txt"), textTurn("Wrote it"))...)
		r, progress := m.run("write hello.txt", contract.ModeAsk)
		who := &asked{answers: []string{contract.AnswerDeny, contract.AnswerAlways}}
		r.Ask, r.Warm = who.ask, newWarm(t)
		res, err := m.agent.Run(acpCtx(t), r)
		if err != nil {
			t.Fatalf("run 1: %v", err)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "hello.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("hello.txt after a no: %v", err)
		}
		if len(who.qs) != 1 || who.qs[0].Tool != "Bash" || !strings.HasPrefix(who.qs[0].Text, k.who+" wants to run `printf hi > hello.txt`") {
			t.Fatalf("questions %+v", who.qs)
		}
		if q := who.qs[0]; q.Rule.Tool != "Bash" || q.Rule.Prefix != "printf" || q.Session != res.SessionID {
			t.Errorf("question's rule %+v, session %q (run's %q)", q.Rule, q.Session, res.SessionID)
		}
		if got := progress(); len(got) != 0 {
			t.Errorf("progress of a denied call: %q", got)
		}
		r.SessionID, r.Job.Text = res.SessionID, "please, go on"
		res, err = m.agent.Run(acpCtx(t), r)
		if err != nil {
			t.Fatalf("run 2: %v", err)
		}
		if !res.Warm || res.Text != "Wrote it" {
			t.Errorf("run 2: warm %v, reply %q", res.Warm, res.Text)
		}
		if b, err := os.ReadFile(filepath.Join(r.Dir, "hello.txt")); err != nil || string(b) != "hi" {
			t.Errorf("hello.txt after always: %q, %v", b, err)
		}
	})
}

// A follow-up goes to the warm agent, in the session it holds: the model
// sees the earlier turn, and no new process starts.
func TestACPWarmFollowUp(t *testing.T) {
	eachKit(t, func(t *testing.T, k acpKit) {
		m := k.start(t, textTurn("one"), textTurn("two"))
		r, _ := m.run("first", contract.ModeAuto)
		r.Warm = newWarm(t)
		res, err := m.agent.Run(acpCtx(t), r)
		if err != nil || res.Text != "one" || res.Warm {
			t.Fatalf("run 1: %q warm %v, %v", res.Text, res.Warm, err)
		}
		pids := r.Warm.Pids()
		if len(pids) == 0 {
			t.Fatal("no warm agent kept")
		}
		r.SessionID, r.Job.Text = res.SessionID, "second"
		res, err = m.agent.Run(acpCtx(t), r)
		if err != nil || res.Text != "two" || !res.Warm {
			t.Fatalf("run 2: %q warm %v, %v", res.Text, res.Warm, err)
		}
		if got := r.Warm.Pids(); len(got) == 0 || got[0] != pids[0] {
			t.Errorf("warm agent %v, then %v", pids, got)
		}
		if sent := m.sent(m.requests() - 1); !strings.Contains(sent, "first") || !strings.Contains(sent, "one") {
			t.Errorf("follow-up's request: %q", sent)
		}
		if p := m.prompt(m.requests() - 1); strings.Contains(p, "textslash shot") || !strings.Contains(p, "second") {
			t.Errorf("follow-up's prompt: %q", p)
		}
	})
}

// Cancelling the run ends the turn by session/cancel, and the agent,
// which ended it, is kept.
func TestACPCancel(t *testing.T) {
	eachKit(t, func(t *testing.T, k acpKit) {
		m := k.start(t, kitTurn{text: "late", after: time.Minute})
		r, _ := m.run("think long", contract.ModeAuto)
		r.Warm = newWarm(t)
		ctx, cancel := context.WithCancel(acpCtx(t))
		go func() {
			for m.requests() == 0 && ctx.Err() == nil {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
		}()
		_, err := m.agent.Run(ctx, r)
		if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrFailed) {
			t.Fatalf("err %v", err)
		}
		if len(r.Warm.Pids()) == 0 {
			t.Error("the agent, which ended its turn, was not kept")
		}
	})
}

// Plan mode: whatever the agent asks to run is refused; Gemini works in
// its own plan mode, Codex (run with no modes) is told to plan only.
func TestACPPlan(t *testing.T) {
	eachKit(t, func(t *testing.T, k acpKit) {
		m := k.start(t, shellTurn("printf hi > hello.txt"), textTurn("Plan: write hello.txt"))
		r, _ := m.run("write hello.txt", contract.ModePlan)
		res, err := m.agent.Run(acpCtx(t), r)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if _, err := os.Stat(filepath.Join(r.Dir, "hello.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("hello.txt in plan mode: %v", err)
		}
		if !strings.HasSuffix(res.Text, msgPlanGo) {
			t.Errorf("plan reply %q", res.Text)
		}
		if p := m.prompt(0); strings.Contains(p, "Plan only") == k.planMode {
			t.Errorf("prompt %q (the agent's plan mode: %v)", p, k.planMode)
		}
	})
}

// A session is continued by a new process (a restart, another runner)
// through session/load. (Codex only: Gemini CLI 0.61.0 loses a session
// loaded in the minute it began, geminitest's TestLoadSession says why.)
func TestACPLoadsSession(t *testing.T) {
	k := acpKits[0]
	m := k.start(t, textTurn("one"), textTurn("two"))
	r, _ := m.run("remember 42", contract.ModeAuto)
	res, err := m.agent.Run(acpCtx(t), r)
	if err != nil {
		t.Fatalf("run 1: %v", err)
	}
	r.SessionID, r.Job.Text = res.SessionID, "what was it?"
	res2, err := m.agent.Run(acpCtx(t), r)
	if err != nil || res2.Text != "two" || res2.SessionID != res.SessionID {
		t.Fatalf("run 2: %q session %q (was %q), %v", res2.Text, res2.SessionID, res.SessionID, err)
	}
	if sent := m.sent(1); !strings.Contains(sent, "remember 42") {
		t.Errorf("the loaded session's request: %q", sent)
	}
}

// Check starts the agent and opens a session without a model call: with
// an OPENAI_API_KEY, codex-acp's built-in provider is logged in by its
// env_var method (authenticate); with none, it is not logged in, said
// with the fix.
func TestACPCheck(t *testing.T) {
	m := openaitest.NewModel(t)
	a, _ := NamedACP(contract.AgentCodex, openaitest.Binary(t))
	t.Setenv("OPENAI_API_KEY", "") // runs inherit the machine's
	t.Setenv("CODEX_API_KEY", "")
	u, err := sandbox.LookupUser(claudetest.AgentUser(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"sk-check", ""} {
		r, _ := claudeRun(t, "")
		home := filepath.Join(filepath.Dir(r.Dir), "home")
		ownedDir(t, filepath.Join(home, ".codex"))
		env := []string{"CODEX_HOME=" + filepath.Join(home, ".codex")}
		if key != "" {
			env = append(env, "OPENAI_API_KEY="+key)
		}
		err := a.Check(acpCtx(t), r.Dir, sandbox.CommandFunc(r.Dir, home, u, true, env...))
		var se *SetupError
		switch {
		case key != "" && err != nil:
			t.Errorf("with a key: %v", err)
		case key == "" && (!errors.As(err, &se) || !strings.HasPrefix(se.Reason, ReasonACPNotLoggedIn) || se.Fix != a.Fix()):
			t.Errorf("without a key: %v; want not logged in", err)
		}
	}
	if n := len(m.Requests()); n != 0 {
		t.Errorf("%d model requests; want none", n)
	}
}

// What an ACP agent hands over comes back as Claude Code's does: the
// marker lines of its reply (SCREENSHOT_CAPTURED:, FILE_CAPTURED:) are
// handovers, and are left out of the reply. (None of the three agents
// sends an image as a content block: Gemini CLI 0.61 sends text only.)
func TestACPHandsOver(t *testing.T) {
	eachKit(t, func(t *testing.T, k acpKit) {
		m := k.start(t, textTurn("Here it is.\nSCREENSHOT_CAPTURED:tmp/ai_screenshots/app.png\nFILE_CAPTURED:report.pdf"))
		r, _ := m.run("show me the app", contract.ModeAuto)
		res, err := m.agent.Run(acpCtx(t), r)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		want := []Handover{{Path: "tmp/ai_screenshots/app.png"}, {Path: "report.pdf", File: true}}
		if res.Text != "Here it is." || !slices.Equal(res.Handovers, want) {
			t.Errorf("reply %q, handovers %+v; want %+v", res.Text, res.Handovers, want)
		}
	})
}

// An idle warm agent is stopped as a warm Claude Code is
// (TestWarmPausedWhileIdle), and the next message continues it: it
// answers warm, in its session.
func TestACPPausedWhileIdle(t *testing.T) {
	shortPause(t)
	eachKit(t, func(t *testing.T, k acpKit) {
		m := k.start(t, textTurn("one"), textTurn("two"))
		r, _ := m.run("first", contract.ModeAuto)
		r.Warm = newWarm(t)
		res, err := m.agent.Run(acpCtx(t), r)
		if err != nil || res.Text != "one" {
			t.Fatalf("run 1: %q, %v", res.Text, err)
		}
		pids := r.Warm.Pids()
		if len(pids) == 0 {
			t.Fatal("no warm agent kept")
		}
		natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
			if s := procState(pids[0]); s != "T" {
				return fmt.Errorf("the idle agent (pid %d) is in state %q; want T (stopped)", pids[0], s)
			}
			return nil
		})
		r.SessionID, r.Job.Text = res.SessionID, "second"
		res, err = m.agent.Run(acpCtx(t), r)
		if err != nil || res.Text != "two" || !res.Warm {
			t.Fatalf("run 2 after the pause: %q warm %v, %v", res.Text, res.Warm, err)
		}
	})
}
