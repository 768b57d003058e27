package openaitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// shellTurn is Codex 0.16.0's shell tool (its unified exec, offered as
// exec_command {"cmd": ...} in every request's tools) running cmd.
func shellTurn(cmd string) Turn {
	return ToolCall("exec_command", map[string]any{"cmd": cmd})
}

// newSession starts codex-acp on m, initializes it and opens a session in
// the workspace, answering permission requests with an option of kind
// choose.
func newSession(t *testing.T, m *Model, choose acp.PermissionOptionKind) (*agent, dirs, acp.SessionId) {
	t.Helper()
	u := AgentUser(t)
	d := newDirs(t, u)
	a := startAgent(t, m, d, u, AskEveryCommand()...)
	a.client.choose = choose
	init := a.initialize(t)
	if !init.AgentCapabilities.LoadSession {
		t.Errorf("initialize: loadSession false")
	}
	s, err := a.conn.NewSession(ctx(t), acp.NewSessionRequest{Cwd: d.work, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", describe(err))
	}
	logJSON(t, "session/new", s)
	return a, d, s.SessionId
}

// prompt sends text to session id and returns the agent's answer.
func (a *agent) prompt(t *testing.T, id acp.SessionId, text string) acp.PromptResponse {
	t.Helper()
	r, err := a.conn.Prompt(ctx(t), acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		t.Fatalf("session/prompt: %v", describe(err))
	}
	logJSON(t, "session/prompt", r)
	return r
}

// kinds are the sessionUpdate kinds of us, in order.
func kinds(us []acp.SessionUpdate) []string {
	var out []string
	for _, u := range us {
		b, _ := json.Marshal(u)
		var k struct {
			SessionUpdate string `json:"sessionUpdate"`
		}
		_ = json.Unmarshal(b, &k)
		out = append(out, k.SessionUpdate)
	}
	return out
}

// said is the text of the agent_message_chunk updates of us.
func said(us []acp.SessionUpdate) string {
	var sb strings.Builder
	for _, u := range us {
		if c := u.AgentMessageChunk; c != nil && c.Content.Text != nil {
			sb.WriteString(c.Content.Text.Text)
		}
	}
	return sb.String()
}

// A shell command allowed once runs, and the turn ends with the model's
// text.
func TestShellAllowed(t *testing.T) {
	m := NewModel(t, shellTurn("printf hi > hello.txt"), Text("All done"))
	a, d, id := newSession(t, m, acp.PermissionOptionKindAllowOnce)
	r := a.prompt(t, id, "make hello.txt")
	if r.StopReason != acp.StopReasonEndTurn {
		t.Errorf("stopReason %q; want end_turn", r.StopReason)
	}
	asked := a.client.permissions()
	if len(asked) != 1 {
		t.Fatalf("%d permission requests; want 1", len(asked))
	}
	for _, o := range asked[0].Options {
		t.Logf("permission option: id=%s kind=%s name=%q", o.OptionId, o.Kind, o.Name)
	}
	if b, err := os.ReadFile(filepath.Join(d.work, "hello.txt")); err != nil || string(b) != "hi" {
		t.Errorf("hello.txt: %q, %v; want hi", b, err)
	}
	us := a.client.updates()
	t.Logf("session/update kinds: %s", strings.Join(kinds(us), " "))
	if got := said(us); got != "All done" {
		t.Errorf("agent said %q; want All done", got)
	}
	reqs := m.MainRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d main requests; want 2", len(reqs))
	}
	outs := reqs[1].ToolOutputs()
	if len(outs) != 1 || outs[0].CallID != "call_openaitest0001" || !strings.Contains(outs[0].Text(), "exited with code 0") {
		t.Errorf("second request's tool outputs %+v; want call_openaitest0001's, exit code 0", outs)
	}
	t.Logf("first model request %v after codex-acp started", reqs[0].At.Sub(a.started))
}

// A shell command rejected does not run.
func TestShellRejected(t *testing.T) {
	m := NewModel(t, shellTurn("printf hi > hello.txt"), Text("All done"))
	a, d, id := newSession(t, m, acp.PermissionOptionKindRejectOnce)
	r := a.prompt(t, id, "make hello.txt")
	t.Logf("stopReason %s after %d turns; updates %s", r.StopReason, m.Turns(), strings.Join(kinds(a.client.updates()), " "))
	if n := len(a.client.permissions()); n != 1 {
		t.Errorf("%d permission requests; want 1", n)
	}
	if _, err := os.Stat(filepath.Join(d.work, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt: %v; want it missing", err)
	}
}

// session/cancel while the model thinks ends the prompt as cancelled.
func TestCancel(t *testing.T) {
	m := NewModel(t, Text("too late").After(10*time.Second))
	a, _, id := newSession(t, m, acp.PermissionOptionKindAllowOnce)
	done := make(chan acp.PromptResponse, 1)
	go func() {
		r, err := a.conn.Prompt(ctx(t), acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock("think")}})
		if err != nil {
			t.Errorf("session/prompt: %v", describe(err))
		}
		done <- r
	}()
	waitFor(t, "the model's request", func() bool { return len(m.MainRequests()) == 1 })
	if err := a.conn.Cancel(ctx(t), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatalf("session/cancel: %v", err)
	}
	select {
	case r := <-done:
		logJSON(t, "session/prompt", r)
		if r.StopReason != acp.StopReasonCancelled {
			t.Errorf("stopReason %q; want cancelled", r.StopReason)
		}
	case <-time.After(time.Minute):
		t.Fatal("session/prompt did not return after session/cancel")
	}
	if got := said(a.client.updates()); got != "" {
		t.Errorf("agent said %q after cancel; want nothing", got)
	}
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
