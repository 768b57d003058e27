package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
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
	// Mode auto: Claude Code acts without asking (ask mode: permission_e2e_test.go).
	env := append([]string{"TEXTSLASH_AGENT=claude", "TEXTSLASH_CLAUDE_BIN=" + bin, "TEXTSLASH_DEFAULT_MODE=auto"}, claudetest.Env(model)...)
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

// startClaude runs the all-in-one with the real Claude Code CLI against
// model, in mode auto unless env says otherwise.
func startClaude(t testing.TB, model *claudetest.Model, env ...string) *instance {
	t.Helper()
	return startClaudeAs(t, "", model, env...)
}

// startClaudeAs is startClaude run as the OS user name (startServeAs),
// whose runs are its own; "": as this test's user, runs as the agent user.
func startClaudeAs(t testing.TB, name string, model *claudetest.Model, env ...string) *instance {
	t.Helper()
	env = append(append([]string{"TEXTSLASH_AGENT=claude", "TEXTSLASH_CLAUDE_BIN=" + claudetest.Binary(t),
		"TEXTSLASH_DEFAULT_MODE=auto"}, claudetest.Env(model)...), env...)
	if name != "" {
		return startServeAs(t, name, env...)
	}
	if u := claudetest.AgentUser(t); u != "" {
		env = append(env, "TEXTSLASH_AGENT_USER="+u)
	}
	return startServe(t, env...)
}

// ask sends text and waits for the reply.
func (c *chat) ask(events <-chan sseEvent, text string) contract.Event {
	c.t.Helper()
	id := c.send(text)
	return waitFor(c.t, events, 90*time.Second, func(ev sseEvent) bool {
		return ev.Kind == "done" && ev.Event.JobID == id
	}).Event
}

// userTurns is the text of every user message in the model's last main
// request: what the conversation holds so far.
func userTurns(m *claudetest.Model) []string {
	reqs := m.MainRequests()
	var out []string
	for _, msg := range reqs[len(reqs)-1].Messages {
		if msg.Role != "user" {
			continue
		}
		for _, b := range msg.Content {
			if b.Type == "text" && !strings.HasPrefix(b.Text, "<system-reminder>") {
				out = append(out, b.Text)
			}
		}
	}
	return out
}

// A person's next message continues their session: the model receives
// the earlier turns. Another person's does not, and "new" starts afresh.
func TestClaudeSessions(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.Text("Noted."),
		claudetest.Text("You said swordfish."),
		claudetest.Text("Hello, Bob."),
		claudetest.Text("A fresh start."),
	)
	inst := startClaude(t, model)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	alice, bob := inst.newChat(t), inst.newChat(t)
	aliceEvents, bobEvents := alice.events(ctx), bob.events(ctx)

	alice.ask(aliceEvents, "remember swordfish")
	if got := alice.ask(aliceEvents, "what did I say?"); got.Text != "You said swordfish." {
		t.Fatalf("reply %q", got.Text)
	}
	if turns := userTurns(model); !mentionsAll(turns, "remember swordfish", "what did I say?") {
		t.Errorf("alice's second message: the model saw user turns %q; want both of hers", turns)
	}
	bob.ask(bobEvents, "hi, I am Bob")
	if turns := userTurns(model); containsAny(turns, "swordfish") || !mentionsAll(turns, "hi, I am Bob") {
		t.Errorf("bob's first message: the model saw %q; want only his", turns)
	}
	id := alice.send("new")
	waitFor(t, aliceEvents, 10*time.Second, func(ev sseEvent) bool { return ev.Kind == "notice" && ev.Event.JobID == id })
	alice.ask(aliceEvents, "start over")
	if turns := userTurns(model); containsAny(turns, "swordfish") || !mentionsAll(turns, "start over") {
		t.Errorf("after new: the model saw %q; want a fresh session", turns)
	}
}

func mentionsAll(turns []string, want ...string) bool {
	for _, w := range want {
		if !containsAny(turns, w) {
			return false
		}
	}
	return true
}

func containsAny(turns []string, s string) bool {
	for _, t := range turns {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// A run that leaves uncommitted changes asks for approval with a summary
// of them; reject restores the tree, approve commits on a branch.
func TestClaudeApproval(t *testing.T) {
	setup := "git init -q && git config user.email a@b && git config user.name A && echo one > kept.txt && git add . && git commit -qm init"
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": setup, "description": "make a repository"}),
		claudetest.Text("Repository ready."),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo two >> kept.txt && echo new > new.txt", "description": "edit"}),
		claudetest.Text("Edited."),
		claudetest.ToolUse("Bash", map[string]any{"command": "echo three >> kept.txt", "description": "edit again"}),
		claudetest.Text("Edited again."),
	)
	inst := startClaude(t, model, "TEXTSLASH_CHROMIUM="+shottest.Chromium(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := inst.newChat(t)
	events := c.events(ctx)
	ws := filepath.Join(inst.Data, "workspaces", c.User.Key())
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", ws, "-c", "safe.directory=*"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}

	if got := c.ask(events, "make a repository"); got.Approval || got.Text != "Repository ready." {
		t.Fatalf("clean repository: reply %q, approval %t; want no approval", got.Text, got.Approval)
	}
	// A person reads the request before answering; the test waits for the
	// dispatcher to have taken it (a reply faster than that is answered
	// "still working").
	awaiting := func() {
		waitFor(t, events, 10*time.Second, func(ev sseEvent) bool {
			return ev.Kind == "state" && ev.Event.To == contract.StateAwaitingApproval
		})
	}
	got := c.ask(events, "edit")
	if !got.Approval {
		t.Fatalf("reply %q without approval; want an approval request", got.Text)
	}
	awaiting()
	for _, want := range []string{"Edited.", "Changes waiting for your approval: 2 files, +2 −0", "M kept.txt (+1 −0)", "A new.txt (+1 −0)", "Reply approve"} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("approval request lacks %q:\n%s", want, got.Text)
		}
	}
	if len(got.Images) != 1 {
		t.Errorf("approval request with %d images; want the diff drawn as one", len(got.Images))
	}
	if r := c.ask(events, "reject"); !strings.Contains(r.Text, "Discarded") {
		t.Errorf("reject: %q", r.Text)
	}
	if st := git("status", "--porcelain"); st != "" {
		t.Errorf("after reject: git status %q; want clean", st)
	}

	if got := c.ask(events, "edit again"); !got.Approval {
		t.Fatalf("second edit: no approval request (%q)", got.Text)
	}
	awaiting()
	r := c.ask(events, "approve")
	if !strings.Contains(r.Text, "textslash/") {
		t.Errorf("approve: %q; want the branch named", r.Text)
	}
	if branch := git("rev-parse", "--abbrev-ref", "HEAD"); !strings.HasPrefix(branch, "textslash/") {
		t.Errorf("after approve: on branch %q", branch)
	}
	if st := git("status", "--porcelain"); st != "" {
		t.Errorf("after approve: git status %q; want clean", st)
	}
	// The commit is named for the person's request.
	if log := git("log", "--format=%s%n%b", "-1"); !strings.HasPrefix(log, "edit again\n") || !strings.Contains(log, "Approved from textslash") {
		t.Errorf("last commit %q; want the request, approved from textslash", log)
	}
}
