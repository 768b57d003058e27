package openaitest

import (
	"errors"
	"fmt"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// An API error fails the prompt at once, with one request (Args turns
// Codex's retries off): session/prompt answers a JSON-RPC error.
func TestAPIError(t *testing.T) {
	for _, status := range []int{400, 500} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			m := NewModel(t, APIError(status, "openaitest boom"))
			a, _, id := newSession(t, m, acp.PermissionOptionKindAllowOnce)
			_, err := a.conn.Prompt(ctx(t), acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}})
			var re *acp.RequestError
			if !errors.As(err, &re) {
				t.Fatalf("session/prompt: %v; want a JSON-RPC error", err)
			}
			t.Logf("session/prompt: %v", describe(err))
			if n := len(m.MainRequests()); n != 1 {
				t.Errorf("%d model requests; want 1", n)
			}
		})
	}
}
