package opencodetest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/textslash/textslash/runner/claudetest"
)

// bashHello is opencode's bash tool writing hello.txt in the workspace.
var bashHello = claudetest.ToolUse("bash", map[string]string{
	"command": "echo hi > hello.txt", "description": "Create hello.txt",
})

// toolTurn runs "make hello.txt" (bash, then "All done") choosing with
// choose, and returns the agent, the workspace and the prompt's response.
func toolTurn(t *testing.T, choose func(acp.RequestPermissionRequest) acp.RequestPermissionOutcome) (*agent, *claudetest.Model, dirs, acp.PromptResponse) {
	t.Helper()
	m := claudetest.NewModel(t, bashHello, claudetest.Text("All done"))
	d := newDirs(t)
	a := startAgent(t, m, d, choose)
	init := a.initialize(t)
	if len(init.AuthMethods) > 0 {
		t.Logf("authMethods offered: %d (not needed: the key is in the config)", len(init.AuthMethods))
	}
	s := a.newSession(t, d)
	res := a.prompt(t, s.SessionId, "make hello.txt")
	main := m.MainRequests()
	if len(main) == 0 {
		t.Fatal("no main request reached the model")
	}
	if !slices.Contains(main[0].Tools, "bash") {
		t.Fatalf("first request offers tools %v; want bash among them", main[0].Tools)
	}
	t.Logf("tools offered: %v", main[0].Tools)
	t.Logf("first model request %v after start", main[0].At.Sub(a.start))
	for _, r := range m.Requests() {
		t.Logf("request %s %s main=%t headers=%v", r.Method, r.Path, r.Main, r.Header)
	}
	t.Logf("update kinds: %v", a.client.updateKinds())
	return a, m, d, res
}

func TestPermissionAllowOnce(t *testing.T) {
	a, m, d, res := toolTurn(t, selectKind(acp.PermissionOptionKindAllowOnce))
	perms := a.client.permissions()
	if len(perms) != 1 {
		t.Fatalf("got %d permission requests; want 1", len(perms))
	}
	for _, o := range perms[0].Options {
		t.Logf("permission option id=%q kind=%q name=%q", o.OptionId, o.Kind, o.Name)
	}
	if b, err := os.ReadFile(filepath.Join(d.ws, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("hello.txt: %q, %v; want \"hi\\n\"", b, err)
	}
	if got := a.client.messageText(); got != "All done" {
		t.Errorf("agent message %q; want \"All done\"", got)
	}
	if res.StopReason != acp.StopReasonEndTurn {
		t.Errorf("stopReason %q; want end_turn", res.StopReason)
	}
	if n := m.Turns(); n != 2 {
		t.Errorf("%d turns answered; want 2", n)
	}
}

func TestPermissionReject(t *testing.T) {
	a, m, d, res := toolTurn(t, selectKind(acp.PermissionOptionKindRejectOnce))
	if n := len(a.client.permissions()); n != 1 {
		t.Fatalf("got %d permission requests; want 1", n)
	}
	if _, err := os.Stat(filepath.Join(d.ws, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt: %v; want it not to exist (the tool was rejected)", err)
	}
	// opencode ends the turn on a rejection: the model is not asked again.
	if res.StopReason != acp.StopReasonEndTurn || m.Turns() != 1 {
		t.Errorf("after reject: stopReason %q, %d turns answered; want end_turn, 1", res.StopReason, m.Turns())
	}
	for _, r := range m.MainRequests()[1:] {
		for _, b := range r.ToolResults() {
			t.Logf("tool_result after reject: is_error=%t %q", b.IsError, b.ResultText())
		}
	}
}

func TestCancelMidTurn(t *testing.T) {
	m := claudetest.NewModel(t, claudetest.Text("too late").After(10*time.Second))
	d := newDirs(t)
	a := startAgent(t, m, d, selectKind(acp.PermissionOptionKindRejectOnce))
	a.initialize(t)
	s := a.newSession(t, d)
	done := make(chan acp.PromptResponse, 1)
	go func() { done <- a.prompt(t, s.SessionId, "take your time") }()
	// Cancel once the model has the request, so the turn is mid-way.
	for len(m.MainRequests()) == 0 {
		select {
		case res := <-done:
			t.Fatalf("prompt ended (%q) before the model was asked", res.StopReason)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := a.conn.Cancel(t.Context(), acp.CancelNotification{SessionId: s.SessionId}); err != nil {
		t.Fatalf("session/cancel: %v", err)
	}
	select {
	case res := <-done:
		if res.StopReason != acp.StopReasonCancelled {
			t.Errorf("stopReason %q; want cancelled", res.StopReason)
		}
	case <-time.After(turnTimeout):
		t.Fatal("prompt did not end after session/cancel")
	}
	if got := a.client.messageText(); got != "" {
		t.Errorf("agent message %q after cancel; want none", got)
	}
}
