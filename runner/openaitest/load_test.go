package openaitest

import (
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// A session outlives its codex-acp: a new process loads it from CODEX_HOME
// (session/load replays it) and the model sees the earlier turn again.
func TestLoadSession(t *testing.T) {
	m := NewModel(t, Text("first answer"), Text("second answer"))
	a, d, id := newSession(t, m, acp.PermissionOptionKindAllowOnce)
	if r := a.prompt(t, id, "first question"); r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("stopReason %q; want end_turn", r.StopReason)
	}
	a.kill()

	b := startAgent(t, m, d, AgentUser(t), AskEveryCommand()...)
	b.initialize(t)
	s, err := b.conn.LoadSession(ctx(t), acp.LoadSessionRequest{SessionId: id, Cwd: d.work, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/load: %v", describe(err))
	}
	logJSON(t, "session/load", s)
	replayed := b.client.updates()
	t.Logf("session/load replayed: %s", strings.Join(kinds(replayed), " "))
	if got := said(replayed); got != "first answer" {
		t.Errorf("replayed agent text %q; want first answer", got)
	}
	if r := b.prompt(t, id, "second question"); r.StopReason != acp.StopReasonEndTurn {
		t.Errorf("stopReason %q; want end_turn", r.StopReason)
	}
	reqs := m.MainRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d main requests; want 2", len(reqs))
	}
	var texts []string
	for _, it := range reqs[1].Input {
		if it.Type == "message" && it.Role != "developer" {
			texts = append(texts, it.Role+": "+it.Text())
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"user: first question", "assistant: first answer", "user: second question"} {
		if !strings.Contains(all, want) {
			t.Errorf("second request's messages lack %q:\n%s", want, all)
		}
	}
}
