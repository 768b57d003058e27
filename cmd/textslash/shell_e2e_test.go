package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// With the shell picked as the agent (no TEXTSLASH_AGENT, no Claude Code
// here), mode and status tell the truth: the shell has no modes.
func TestShellAgentModesEndToEnd(t *testing.T) {
	inst := startServe(t, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	say := func(text string) string {
		id := c.send(text)
		return waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "notice" && ev.Event.JobID == id }).Event.Text
	}
	if got := say("mode plan"); !strings.HasPrefix(got, "The agent here is the shell") {
		t.Errorf("mode plan: got %q; want it to say the shell has no modes", got)
	}
	if got := say("status"); !strings.HasSuffix(got, "Mode: none (the shell runs each message as a command).") {
		t.Errorf("status: got %q; want no mode", got)
	}
}
