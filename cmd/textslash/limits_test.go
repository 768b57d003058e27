package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// bigReply prints 3 MB: more than NATS carries in one message (1 MB).
const bigReply = `head -c 3000000 /dev/zero | tr '\0' x`

// cutNote is how a reply too long to carry whole ends.
var cutNote = regexp.MustCompile(`\[Reply cut: the agent wrote 3\.0 MB; here are the first \d+ KB\.\]$`)

// A 3 MB reply reaches the web chat cut, with a note saying so — never
// lost, never "textslash restarted".
func TestHugeReplyOnWebChat(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	c.send(bigReply)
	ev := waitFor(t, events, 60*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	text := ev.Event.Text
	if !cutNote.MatchString(text) {
		t.Fatalf("reply of %d bytes ends %q; want the cut note", len(text), text[max(0, len(text)-120):])
	}
	if body := strings.TrimRight(text[:strings.LastIndex(text, "\n\n[Reply cut")], "x"); body != "" {
		t.Errorf("the reply's kept part is not the output's start: %q…", body[:min(80, len(body))])
	}
	c.send("echo next")
	if ev := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" }); ev.Event.Text != "next" {
		t.Errorf("next reply %q; want next", ev.Event.Text)
	}
}

// On WhatsApp the cut reply comes in pages, the first at once.
func TestHugeReplyOnWhatsApp(t *testing.T) {
	s := startTwilioServe(t)
	s.webhook(t, "whatsapp:"+phoneAlice, bigReply, nil)
	first := s.api.WaitMessages(t, 1, 60*time.Second)[0]
	if !strings.HasPrefix(first.Body, "xxxx") || !regexp.MustCompile(`Reply MORE for the rest \(page 1/\d+\)$`).MatchString(first.Body) {
		t.Fatalf("first message %q; want the reply's first page", first.Body[:min(200, len(first.Body))])
	}
	if strings.Contains(first.Body, "restarted") {
		t.Errorf("first message says textslash restarted: %q", first.Body)
	}
}
