package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/geminitest"
	"github.com/textslash/textslash/runner/openaitest"
)

// Gemini CLI (TEXTSLASH_AGENT=gemini) through the whole of textslash,
// over the web chat, in its own home: the real CLI against a scripted
// Gemini API. Its command comes to the person as a question; no keeps it
// from running, always lets it run and the same command again without
// asking; progress and the reply come back; cancel mid-turn ends the run
// as cancelled; a follow-up reaches the warm CLI in the same session.
func TestGeminiOverWebChat(t *testing.T) {
	shell := func(cmd string) geminitest.Turn {
		return geminitest.ToolCall("run_shell_command", map[string]any{"command": cmd, "description": "a command"})
	}
	model := geminitest.NewModel(t,
		shell("printf one > one.txt"), geminitest.Text("Not done."),
		shell("printf two >> two.txt"), shell("printf two >> two.txt"), geminitest.Text("Made two, twice."),
		geminitest.Text("Thought it over.").After(2*time.Minute),
		geminitest.Text("Still here."),
	)
	env := append([]string{"TEXTSLASH_AGENT=gemini", "TEXTSLASH_AGENT_BIN=" + geminitest.Binary(t), "TEXTSLASH_DEFAULT_MODE=ask"},
		geminitest.Env(model)...)
	if u := claudetest.AgentUser(t); u != "" {
		env = append(env, "TEXTSLASH_AGENT_USER="+u)
	}
	inst := startServe(t, env...)
	c := inst.newChat(t)
	events := c.events(t.Context())

	c.send("make one")
	q := question(t, events)
	if want := "Gemini wants to run `printf one > one.txt` in your workspace. " + contract.QuestionPrompt; q.Text != want {
		t.Errorf("question %q; want %q", q.Text, want)
	}
	c.send("no")
	if done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" }); done.Event.Text != "Not done." {
		t.Errorf("reply %q", done.Event.Text)
	}
	ws := workspaceOf(t, inst)
	if _, err := os.Stat(filepath.Join(ws, "one.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("one.txt: %v; want it never written (denied)", err)
	}

	id := c.send("make two")
	question(t, events)
	c.send("always")
	var progress []string
	done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool {
		if ev.Kind == "progress" && ev.Event.JobID == id {
			progress = append(progress, ev.Event.Text)
		}
		return ev.Kind == "done" && ev.Event.JobID == id
	})
	if done.Event.Text != "Made two, twice." {
		t.Errorf("reply %q", done.Event.Text)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "two.txt")); err != nil || string(b) != "twotwo" {
		t.Errorf("two.txt = %q, %v; want both calls run (always)", b, err)
	}
	if !strings.Contains(strings.Join(progress, "\n"), "Running `printf two >> two.txt`") {
		t.Errorf("progress %q", progress)
	}

	cancelMidTurn(t, c, events, func() int { return len(model.MainRequests()) }, 6)

	if ev := c.ask(events, "still there?"); ev.Text != "Still here." {
		t.Errorf("follow-up reply %q", ev.Text)
	}
	reqs := model.MainRequests()
	var all []string
	for _, ct := range reqs[len(reqs)-1].Contents {
		for _, p := range ct.Parts {
			all = append(all, p.Text)
		}
	}
	if sent := strings.Join(all, "|"); !strings.Contains(sent, "make two") || strings.Count(sent, "textslash shot") != 1 {
		t.Errorf("the follow-up's request holds %q; want the session so far, textslash's prompt once", sent)
	}
}

// Codex (codex-acp, as acp:<its command line> pointed at a scripted
// Responses API) through the whole of textslash, over the web chat, in
// its own home: a no with words reaches Codex and its answer is the
// reply; cancel mid-turn ends the run as cancelled; the follow-up after
// it reaches the same warm agent, in the same session.
func TestCodexOverWebChat(t *testing.T) {
	model := openaitest.NewModel(t,
		openaitest.ToolCall("exec_command", map[string]any{"cmd": "printf one > one.txt"}), openaitest.Text("Using echo, then."),
		openaitest.Text("Thought it over.").After(2*time.Minute),
		openaitest.Text("Still here."),
	)
	line := []string{openaitest.Binary(t)}
	for _, a := range append(openaitest.AskEveryCommand(), openaitest.Args(model)...) {
		line = append(line, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	// OPENAI_BASE_URL makes the runner reach the model's address from the
	// homes.
	env := []string{"TEXTSLASH_AGENT=acp:" + strings.Join(line, " "), "TEXTSLASH_DEFAULT_MODE=ask",
		"OPENAI_API_KEY=" + openaitest.APIKey, "OPENAI_BASE_URL=" + model.URL() + "/v1"}
	if u := claudetest.AgentUser(t); u != "" {
		env = append(env, "TEXTSLASH_AGENT_USER="+u)
	}
	inst := startServe(t, env...)
	c := inst.newChat(t)
	events := c.events(t.Context())

	c.send("make one")
	if q := question(t, events); !strings.HasPrefix(q.Text, "The agent wants to run `printf one > one.txt` in your workspace.") {
		t.Errorf("question %q", q.Text)
	}
	c.send("no, use echo")
	if done := waitFor(t, events, 90*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" }); done.Event.Text != "Using echo, then." {
		t.Errorf("reply %q; want Codex's answer to the person's words", done.Event.Text)
	}
	if _, err := os.Stat(filepath.Join(workspaceOf(t, inst), "one.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("one.txt: %v; want it never written (denied)", err)
	}
	if p := lastUserText(model); !strings.Contains(p, "use echo") {
		t.Errorf("the model's last prompt %q; want the person's words", p)
	}

	cancelMidTurn(t, c, events, func() int { return len(model.MainRequests()) }, 3)

	if ev := c.ask(events, "still there?"); ev.Text != "Still here." {
		t.Errorf("follow-up reply %q", ev.Text)
	}
	reqs := model.MainRequests()
	var all []string
	for _, it := range reqs[len(reqs)-1].Input {
		all = append(all, it.Text())
	}
	if sent := strings.Join(all, "|"); !strings.Contains(sent, "make one") || strings.Count(sent, "textslash shot") != 1 {
		t.Errorf("the follow-up's request holds %q; want the session so far, textslash's prompt once", sent)
	}
}

// cancelMidTurn sends a message whose model turn is slow, waits for its
// request (the model's nth, as requests counts them), cancels it and
// checks that the run ends cancelled.
func cancelMidTurn(t *testing.T, c *chat, events <-chan sseEvent, requests func() int, nth int) {
	t.Helper()
	slow := c.send("think it over")
	natstest.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		if n := requests(); n < nth {
			return fmt.Errorf("%d requests reached the model; want request %d", n, nth)
		}
		return nil
	})
	c.send("cancel")
	done := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == slow })
	if done.Event.Status != contract.StatusCanceled {
		t.Errorf("done %q (%s); want canceled", done.Event.Text, done.Event.Status)
	}
}

// lastUserText is the last user message of the model's last request.
func lastUserText(m *openaitest.Model) string {
	reqs := m.MainRequests()
	in := reqs[len(reqs)-1].Input
	for j := len(in) - 1; j >= 0; j-- {
		if in[j].Type == "message" && in[j].Role == "user" {
			return in[j].Text()
		}
	}
	return ""
}

// workspaceOf is the workspace of the instance's one web chat person.
func workspaceOf(t *testing.T, inst *instance) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(inst.Data, "workspaces", "web.*"))
	if len(m) != 1 {
		t.Fatalf("web chat workspaces %q; want one", m)
	}
	return m[0]
}
