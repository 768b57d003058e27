package geminitest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// hang bounds every ACP call: the CLI answering none is a failure, not a
// wait (no test asserts on how long anything takes).
const hang = 2 * time.Minute

// logJSON logs v as JSON, for a reader of the test's verbose output.
func logJSON(t testing.TB, what string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	t.Logf("%s: %s", what, b)
}

// session starts gemini --acp talking to m with a fresh HOME, initializes
// it and opens a session on a fresh workspace.
func session(t *testing.T, m *Model, c *client) (a *agent, id acp.SessionId, workspace string) {
	t.Helper()
	home, workspace := ownedDir(t, "geminitest-home-"), ownedDir(t, "geminitest-ws-")
	a = startAgent(t, m, home, c)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	init, err := a.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	logJSON(t, "initialize", init)
	sess, err := a.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: workspace, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	logJSON(t, "session/new", sess)
	return a, sess.SessionId, workspace
}

// prompt sends text and returns the prompt's response.
func prompt(t *testing.T, a *agent, id acp.SessionId, text string) acp.PromptResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	resp, err := a.conn.Prompt(ctx, acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		t.Fatalf("session/prompt: %v", err)
	}
	logJSON(t, "session/prompt", resp)
	return resp
}

// choose selects the first option of kind.
func choose(t testing.TB, kind acp.PermissionOptionKind) func(acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	return func(p acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		logJSON(t, "session/request_permission", p)
		for _, o := range p.Options {
			if o.Kind == kind {
				return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
					Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}
			}
		}
		t.Errorf("no permission option of kind %s in %+v", kind, p.Options)
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}
	}
}

// messageText is the text of the agent_message_chunk updates.
func messageText(ups []acp.SessionUpdate) string {
	var sb strings.Builder
	for _, u := range ups {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			sb.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return sb.String()
}

func shellHello() Turn {
	return ToolCall("run_shell_command", map[string]string{
		"command": "echo hi > hello.txt", "description": "Create hello.txt",
	})
}

// Allowing the shell command once runs it, and the model's last turn is
// the agent's message.
func TestPromptAllowOnce(t *testing.T) {
	m := NewModel(t, shellHello(), Text("All done"))
	c := &client{t: t, choose: choose(t, acp.PermissionOptionKindAllowOnce)}
	a, id, ws := session(t, m, c)
	resp := prompt(t, a, id, "make hello.txt")
	for _, u := range c.Updates() {
		logJSON(t, "session/update", u)
	}
	if resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("stopReason %q; want end_turn", resp.StopReason)
	}
	if len(c.Permissions()) != 1 {
		t.Errorf("got %d permission requests; want 1", len(c.Permissions()))
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("hello.txt: %q, %v; want \"hi\\n\"", b, err)
	}
	// The process runs in HOME: the command runs in the session's cwd.
	if _, err := os.Stat(filepath.Join(a.home, "hello.txt")); err == nil {
		t.Errorf("hello.txt written in HOME, the process's cwd, too")
	}
	if got := messageText(c.Updates()); got != "All done" {
		t.Errorf("agent message %q; want \"All done\"", got)
	}
	if m.Turns() != 2 {
		t.Errorf("answered %d turns; want 2", m.Turns())
	}
	reqs := m.Requests()
	t.Logf("first model request %v after the start", reqs[0].At.Sub(a.started))
	for _, r := range reqs {
		b := string(r.Body)
		if len(b) > 600 {
			b = b[:300] + " ... " + b[len(b)-300:]
		}
		t.Logf("request main=%t %s header=%v body=%s", r.Main, r.Path, r.Header, b)
	}
	logHome(t, a.home)
}

// logHome logs the files the CLI wrote in home.
func logHome(t *testing.T, home string) {
	t.Helper()
	_ = filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(home, path)
			t.Logf("HOME file: %s", rel)
		}
		return nil
	})
}
