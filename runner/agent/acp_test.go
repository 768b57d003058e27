package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/openaitest"
	"github.com/textslash/textslash/runner/sandbox"
)

// The ACP agent, tested with the real codex-acp against a scripted
// Responses API (openaitest): Codex's shell tool is exec_command {"cmd"}.

func codexShell(cmd string) openaitest.Turn {
	return openaitest.ToolCall("exec_command", map[string]any{"cmd": cmd})
}

// codexAgent is the codex agent as TEXTSLASH_AGENT=codex runs it, with m
// its model provider.
func codexAgent(t *testing.T, m *openaitest.Model) *ACP {
	a, ok := NamedACP(contract.AgentCodex, openaitest.Binary(t))
	if !ok {
		t.Fatal("no codex agent")
	}
	a.Args = append(a.Args, openaitest.Args(m)...)
	return a
}

// codexRun is a Run of text in mode, in a fresh workspace, its programs
// told where m is; CODEX_HOME is in the run's home, as it would be.
func codexRun(t *testing.T, m *openaitest.Model, text, mode string) (*Run, func() []string) {
	r, progress := claudeRun(t, text)
	u, err := sandbox.LookupUser(claudetest.AgentUser(t))
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(filepath.Dir(r.Dir), "home")
	codexHome := filepath.Join(home, ".codex") // where Codex keeps its sessions unless told otherwise
	if err := os.Mkdir(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if u != nil {
		if err := os.Chown(codexHome, int(u.UID), int(u.GID)); err != nil {
			t.Fatal(err)
		}
	}
	r.Command = sandbox.CommandFunc(r.Dir, home, u, true, openaitest.Env(m, codexHome)...)
	r.Job.Mode = mode
	return r, progress
}

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
	return Answer{Decision: d}
}

func TestACPRunsTools(t *testing.T) {
	m := openaitest.NewModel(t, codexShell("printf hi > hello.txt"), openaitest.Text("All done: wrote hello.txt"))
	r, progress := codexRun(t, m, "please write hello.txt", contract.ModeAuto)
	res, err := codexAgent(t, m).Run(acpCtx(t), r)
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
	// The first prompt of a session carries textslash's system prompt.
	if in := m.MainRequests()[0].Input; !strings.Contains(lastUser(in), "textslash shot") || !strings.Contains(lastUser(in), "please write hello.txt") {
		t.Errorf("first prompt %q", lastUser(in))
	}
}

// lastUser is the text of the last user message of in.
func lastUser(in []openaitest.Item) string {
	for i := len(in) - 1; i >= 0; i-- {
		if in[i].Type == "message" && in[i].Role == "user" {
			return in[i].Text()
		}
	}
	return ""
}

// In ask mode the person is asked, by the question Claude Code's Bash
// would get; a no keeps the command from running, a yes on the same warm
// agent lets it run.
func TestACPAsks(t *testing.T) {
	m := openaitest.NewModel(t,
		codexShell("printf hi > hello.txt"),
		codexShell("printf hi > hello.txt"), openaitest.Text("Wrote it"))
	a := codexAgent(t, m)
	r, progress := codexRun(t, m, "write hello.txt", contract.ModeAsk)
	who := &asked{answers: []string{contract.AnswerDeny, contract.AnswerAlways}}
	r.Ask, r.Warm = who.ask, newWarm(t)
	res, err := a.Run(acpCtx(t), r)
	if err != nil {
		t.Fatalf("run 1: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "hello.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("hello.txt after a no: %v", err)
	}
	if len(who.qs) != 1 || who.qs[0].Tool != "Bash" || !strings.HasPrefix(who.qs[0].Text, "Codex wants to run `printf hi > hello.txt`") {
		t.Fatalf("questions %+v", who.qs)
	}
	if q := who.qs[0]; q.Rule.Tool != "Bash" || q.Rule.Prefix != "printf" || q.Session != res.SessionID {
		t.Errorf("question's rule %+v, session %q (run's %q)", q.Rule, q.Session, res.SessionID)
	}
	if got := progress(); len(got) != 0 {
		t.Errorf("progress of a denied call: %q", got)
	}
	r.SessionID, r.Job.Text = res.SessionID, "please, go on"
	res, err = a.Run(acpCtx(t), r)
	if err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if !res.Warm || res.Text != "Wrote it" {
		t.Errorf("run 2: warm %v, reply %q", res.Warm, res.Text)
	}
	if b, err := os.ReadFile(filepath.Join(r.Dir, "hello.txt")); err != nil || string(b) != "hi" {
		t.Errorf("hello.txt after always: %q, %v", b, err)
	}
}

// A follow-up goes to the warm agent, in the session it holds: the model
// sees the earlier turn, and no new process starts.
func TestACPWarmFollowUp(t *testing.T) {
	m := openaitest.NewModel(t, openaitest.Text("one"), openaitest.Text("two"))
	a := codexAgent(t, m)
	r, _ := codexRun(t, m, "first", contract.ModeAuto)
	r.Warm = newWarm(t)
	res, err := a.Run(acpCtx(t), r)
	if err != nil || res.Text != "one" || res.Warm {
		t.Fatalf("run 1: %q warm %v, %v", res.Text, res.Warm, err)
	}
	pids := r.Warm.Pids()
	if len(pids) == 0 {
		t.Fatal("no warm agent kept")
	}
	r.SessionID, r.Job.Text = res.SessionID, "second"
	res, err = a.Run(acpCtx(t), r)
	if err != nil || res.Text != "two" || !res.Warm {
		t.Fatalf("run 2: %q warm %v, %v", res.Text, res.Warm, err)
	}
	if got := r.Warm.Pids(); len(got) == 0 || got[0] != pids[0] {
		t.Errorf("warm agent %v, then %v", pids, got)
	}
	in := m.MainRequests()[1].Input
	var all []string
	for _, it := range in {
		all = append(all, it.Text())
	}
	if joined := strings.Join(all, "|"); !strings.Contains(joined, "first") || !strings.Contains(joined, "one") || strings.Contains(lastUser(in), "textslash shot") {
		t.Errorf("follow-up's request: %q", joined)
	}
}

// A session is continued by a new process (a restart, another runner)
// through session/load.
func TestACPLoadsSession(t *testing.T) {
	m := openaitest.NewModel(t, openaitest.Text("one"), openaitest.Text("two"))
	a := codexAgent(t, m)
	r, _ := codexRun(t, m, "remember 42", contract.ModeAuto)
	res, err := a.Run(acpCtx(t), r)
	if err != nil {
		t.Fatalf("run 1: %v", err)
	}
	r.SessionID, r.Job.Text = res.SessionID, "what was it?"
	res2, err := a.Run(acpCtx(t), r)
	if err != nil || res2.Text != "two" || res2.SessionID != res.SessionID {
		t.Fatalf("run 2: %q session %q (was %q), %v", res2.Text, res2.SessionID, res.SessionID, err)
	}
	var all []string
	for _, it := range m.MainRequests()[1].Input {
		all = append(all, it.Text())
	}
	if joined := strings.Join(all, "|"); !strings.Contains(joined, "remember 42") {
		t.Errorf("the loaded session's request: %q", joined)
	}
}

// Cancelling the run ends the turn by session/cancel, at once.
func TestACPCancel(t *testing.T) {
	m := openaitest.NewModel(t, openaitest.Text("late").After(time.Minute))
	a := codexAgent(t, m)
	r, _ := codexRun(t, m, "think long", contract.ModeAuto)
	r.Warm = newWarm(t)
	ctx, cancel := context.WithCancel(acpCtx(t))
	go func() {
		for len(m.MainRequests()) == 0 && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	_, err := a.Run(ctx, r)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrFailed) {
		t.Fatalf("err %v", err)
	}
	if len(r.Warm.Pids()) == 0 {
		t.Error("the agent, which ended its turn, was not kept")
	}
}

// Plan mode: Codex (run by textslash with no modes of its own) is told to
// plan only, and whatever it asks to run is refused.
func TestACPPlan(t *testing.T) {
	m := openaitest.NewModel(t, codexShell("printf hi > hello.txt"), openaitest.Text("Plan: write hello.txt"))
	r, _ := codexRun(t, m, "write hello.txt", contract.ModePlan)
	res, err := codexAgent(t, m).Run(acpCtx(t), r)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "hello.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("hello.txt in plan mode: %v", err)
	}
	if !strings.HasSuffix(res.Text, msgPlanGo) {
		t.Errorf("plan reply %q", res.Text)
	}
	if p := lastUser(m.MainRequests()[0].Input); !strings.Contains(p, "Plan only") {
		t.Errorf("prompt %q", p)
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
	for _, key := range []string{"sk-check", ""} {
		r, _ := codexRun(t, m, "", contract.ModeAuto)
		home := filepath.Join(filepath.Dir(r.Dir), "home")
		u, _ := sandbox.LookupUser(claudetest.AgentUser(t))
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
