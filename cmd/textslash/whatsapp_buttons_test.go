package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/twiliotest"
)

// The real Claude Code CLI in ask mode, over WhatsApp, answered with one
// tap: the question comes as a quick reply with Yes, No and Always
// buttons, the press (ButtonPayload yes) allows the command, and it runs.
// While the run works the person sees "typing…" in answer to their
// message, again once the question is answered.
func TestWhatsAppQuickReplyAnswers(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "echo pressed > pressed.txt"}),
		claudetest.Text("Made it with one tap."),
	)
	s := startTwilioServe(t, claudeEnv(t, model)...)
	ws := filepath.Join(s.Data, "workspaces", "whatsapp."+phoneAlice[1:])
	from := "whatsapp:" + phoneAlice

	sid := s.webhook(t, from, "make it", nil)
	q := waitBody(t, s.api, "Claude wants to run `echo pressed > pressed.txt` in your workspace. "+contract.QuestionPrompt)
	want := []twiliotest.QuickReplyAction{{Title: "Yes", ID: "yes"}, {Title: "No", ID: "no"}, {Title: "Always", ID: "always"}}
	if qr := s.api.QuickReplyOf(q); qr == nil || !slices.Equal(qr.Actions, want) || q.ContentVariables["1"] != q.Body {
		t.Fatalf("question sent with quick reply %+v and variables %v; want Yes, No, Always and the question as 1", qr, q.ContentVariables)
	}
	s.webhook(t, from, "Yes", url.Values{"MessageType": {"button"}, "ButtonPayload": {"yes"}, "ButtonText": {"Yes"}})
	waitBody(t, s.api, "Made it with one tap.")
	if b, err := os.ReadFile(filepath.Join(ws, "pressed.txt")); err != nil || string(b) != "pressed\n" {
		t.Errorf("pressed.txt = %q, %v; want pressed (the press allowed the command)", b, err)
	}
	natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		calls := s.api.Typing()
		for _, c := range calls {
			if c.MessageID != sid || c.Channel != "whatsapp" {
				return fmt.Errorf("typing %+v; want whatsapp, answering %s", c, sid)
			}
		}
		if len(calls) < 2 {
			return fmt.Errorf("%d typing indicators; want one from the start, one after the answer", len(calls))
		}
		return nil
	})
}
