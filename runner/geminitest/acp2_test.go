package geminitest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// Rejecting the shell command does not run it.
func TestPromptReject(t *testing.T) {
	// The CLI may end the turn on a rejection or tell the model: the
	// second turn answers it then.
	m := NewModel(t, shellHello(), Text("Not done"))
	c := &client{t: t, choose: choose(t, acp.PermissionOptionKindRejectOnce)}
	a, id, ws := session(t, m, c)
	resp := prompt(t, a, id, "make hello.txt")
	for _, u := range c.Updates() {
		if u.AvailableCommandsUpdate == nil {
			logJSON(t, "session/update", u)
		}
	}
	if len(c.Permissions()) != 1 {
		t.Errorf("got %d permission requests; want 1", len(c.Permissions()))
	}
	if _, err := os.Stat(filepath.Join(ws, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt after a rejection: %v; want it missing", err)
	}
	if main := m.MainRequests(); len(main) > 1 {
		logJSON(t, "function responses after the rejection", main[1].FunctionResponses())
	}
	t.Logf("stopReason %s after %d model turns, message %q", resp.StopReason, m.Turns(), messageText(c.Updates()))
}

// session/cancel while the model thinks ends the prompt with cancelled.
func TestPromptCancel(t *testing.T) {
	m := NewModel(t, Text("Too late").After(10*time.Minute))
	c := &client{t: t}
	a, id, _ := session(t, m, c)
	done := make(chan acp.PromptResponse, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		resp, err := a.conn.Prompt(ctx, acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock("think long")}})
		if err != nil {
			t.Errorf("session/prompt: %v", err)
		}
		done <- resp
	}()
	for m.Turns() == 0 {
		select {
		case resp := <-done:
			t.Fatalf("prompt ended before the model was asked: %+v", resp)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := a.conn.Cancel(context.Background(), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatalf("session/cancel: %v", err)
	}
	select {
	case resp := <-done:
		logJSON(t, "session/prompt", resp)
		if resp.StopReason != acp.StopReasonCancelled {
			t.Errorf("stopReason %q; want cancelled", resp.StopReason)
		}
	case <-time.After(hang):
		t.Fatal("prompt still running after session/cancel")
	}
}

// A session survives its process: a new gemini --acp on the same HOME
// loads it by id and the model then sees the earlier turns.
func TestSessionLoad(t *testing.T) {
	m := NewModel(t, Text("First answer"), Text("Second answer"))
	a, id, ws := session(t, m, &client{t: t})
	prompt(t, a, id, "first question")
	a.stop()
	logHome(t, a.home)
	ageSessionFiles(t, a.home, ws, id)

	c := &client{t: t}
	b := startAgent(t, m, a.home, c)
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if _, err := b.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	loaded, err := b.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: id, Cwd: ws, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	logJSON(t, "session/load", loaded)
	prompt(t, b, id, "second question")
	for _, u := range c.Updates() {
		if u.AvailableCommandsUpdate == nil {
			logJSON(t, "session/update (replay, then the second prompt)", u)
		}
	}
	main := m.MainRequests()
	if len(main) != 2 {
		t.Fatalf("got %d main requests; want 2", len(main))
	}
	var said []string
	for _, ct := range main[1].Contents {
		for _, p := range ct.Parts {
			if p.Text != "" {
				said = append(said, ct.Role+": "+p.Text)
			}
		}
	}
	if !contains(said, "user: first question") || !contains(said, "model: First answer") || !contains(said, "user: second question") {
		t.Errorf("second main request's contents %q; want the first turn's question and answer, then the second question", said)
	}
}

// ageSessionFiles renames the session's files under home as if it had
// started in 2020. Gemini CLI 0.61.0 names a session's file after the
// minute its recording starts (session-2026-12-02T07-57-<id[:8]>.jsonl),
// and session/load first starts a new recording for the id, then reads the
// session: in the minute the session started, the new recording is the old
// file, its history reset to the session context alone, and session/load
// fails with "No previous sessions found for this project". A session
// loaded in a later minute, as a restart usually is, keeps its file.
func ageSessionFiles(t *testing.T, home, workspace string, id acp.SessionId) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(home, ".gemini", "tmp", filepath.Base(workspace), "chats", "session-*-"+string(id)[:8]+".jsonl"))
	if err == nil && len(files) == 0 {
		err = errors.New("none found")
	}
	if err != nil {
		t.Fatalf("session files: %v", err)
	}
	for _, f := range files {
		if err := os.Rename(f, filepath.Join(filepath.Dir(f), "session-2020-01-01T00-00-"+string(id)[:8]+".jsonl")); err != nil {
			t.Fatal(err)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// authenticate with the API key method and a key in _meta: the CLI then
// sends that key, still to GOOGLE_GEMINI_BASE_URL, and keeps the method
// in HOME's settings.
func TestAuthenticateAPIKey(t *testing.T) {
	m := NewModel(t, Text("Hello"))
	home, ws := ownedDir(t, "geminitest-home-"), ownedDir(t, "geminitest-ws-")
	a := startAgent(t, m, home, &client{t: t})
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if _, err := a.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	auth := acp.AuthenticateRequest{MethodId: "gemini-api-key", Meta: map[string]any{"api-key": "geminitest-other-key"}}
	if _, err := a.conn.Authenticate(ctx, auth); err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	sess, err := a.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: ws, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	prompt(t, a, sess.SessionId, "hi")
	main := m.MainRequests()
	if len(main) != 1 || main[0].Header.Get("X-Goog-Api-Key") != "geminitest-other-key" {
		t.Errorf("main requests %d, the first with key %q; want 1 with the authenticated key", len(main), main[0].Header.Get("X-Goog-Api-Key"))
	}
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	t.Logf("settings.json after authenticate: %s (%v)", b, err)
}
