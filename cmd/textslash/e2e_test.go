package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// tap records every subject seen on ts.> over a real NATS connection, the
// way `nats sub 'ts.>'` does.
type tap struct {
	mu       sync.Mutex
	subjects []string
}

func (inst *instance) tap(t *testing.T) (*tap, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(inst.adminURL(t))
	if err != nil {
		t.Fatalf("connect to textslash's NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	tp := &tap{}
	if _, err := nc.Subscribe("ts.>", func(m *nats.Msg) {
		tp.mu.Lock()
		tp.subjects = append(tp.subjects, m.Subject)
		tp.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return tp, nc
}

func (tp *tap) seen() []string {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return slices.Clone(tp.subjects)
}

func TestWebChatEndToEnd(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	tp, nc := inst.tap(t)
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)

	id := c.send("echo hello")
	done := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	if done.Event.JobID != id {
		t.Errorf("done job_id = %q; want %q", done.Event.JobID, id)
	}
	if done.Event.Text != "hello" || done.Event.Status != contract.StatusOK {
		t.Errorf("reply = %q (%s); want %q (ok)", done.Event.Text, done.Event.Status, "hello")
	}
	// One trace id is on the message's lines in every service.
	traceFollows(t, inst.Log, inboundTrace(t, inst.Log, id), map[string][]string{
		"ingress":    {"inbound", "web event streamed"}, // the web chat is ingress's channel
		"dispatcher": {"job published", "state"},
		"runner":     {"run started", "run ended"},
	})

	// Each hop shows on its subject.
	u := c.User
	want := []string{
		contract.InboundSubject(u),
		contract.JobSubject(u),
		contract.EventSubject(u, contract.KindState),
		contract.EventSubject(u, contract.KindDone),
	}
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if seen := tp.seen(); !containsAll(seen, want) {
			return fmt.Errorf("subjects seen %v; want all of %v", seen, want)
		}
		return nil
	})

	// The broker holds the streams, bucket and object store subjects.md lists.
	js, _ := jetstream.New(nc)
	var streams []string
	for name := range js.StreamNames(ctx).Name() {
		streams = append(streams, name)
	}
	for _, s := range []string{contract.StreamIn, contract.StreamJobs, contract.StreamQueue, contract.StreamEvents, "KV_" + contract.BucketUsers, "OBJ_" + contract.BucketMedia} {
		if !slices.Contains(streams, s) {
			t.Errorf("streams %v lack %s", streams, s)
		}
	}
	// The user is idle again, in the users bucket.
	natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error { return stateIdle(ctx, js, u) })
	// The shell ran in the user's own workspace.
	if _, err := os.Stat(filepath.Join(inst.Data, "workspaces", u.Key())); err != nil {
		t.Errorf("workspace: %v", err)
	}
}

// A busy user's messages wait their turn, are acknowledged, and run in
// order; another user is not held up by them.
func TestWebChatQueueAndOrder(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := inst.newChat(t), inst.newChat(t)
	evA, evB := a.events(ctx), b.events(ctx)

	a.send("sleep 1; echo first")
	a.send("echo second")
	a.send("echo third")
	b.send("echo other user")

	gotB := waitFor(t, evB, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	if gotB.Event.Text != "other user" {
		t.Errorf("user b reply = %q", gotB.Event.Text)
	}
	var replies, notices []string
	for len(replies) < 3 {
		ev := waitFor(t, evA, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" || ev.Kind == "notice" })
		if ev.Kind == "done" {
			replies = append(replies, ev.Event.Text)
		} else {
			notices = append(notices, ev.Event.Text)
		}
	}
	if want := []string{"first", "second", "third"}; !slices.Equal(replies, want) {
		t.Errorf("replies %q; want %q", replies, want)
	}
	if want := []string{"Got it, I'll process this next.", "Got it. You're 2nd in line."}; !slices.Equal(notices, want) {
		t.Errorf("notices %q; want %q", notices, want)
	}
}

// Restarting keeps the conversation: the new page gets its history, and a
// reconnect with Last-Event-ID resumes after it.
func TestRestartKeepsHistory(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	first := c.events(ctx)
	c.send("echo before restart")
	done := waitFor(t, first, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	cancel()

	inst.stop()
	inst.start(t)

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	replay := c.events(ctx)
	again := waitFor(t, replay, 10*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	if again.ID != done.ID || again.Event.Text != "before restart" {
		t.Errorf("replayed done %s %q; want %s %q", again.ID, again.Event.Text, done.ID, "before restart")
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, inst.URL+"/api/events", nil)
	req.Header.Set("Last-Event-ID", done.ID)
	resp, err := c.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resumed := make(chan sseEvent, 10)
	go func() { defer resp.Body.Close(); readSSE(resp.Body, resumed) }()
	c.send("echo after restart")
	next := waitFor(t, resumed, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	if next.Event.Text != "after restart" {
		t.Errorf("first done after Last-Event-ID = %q; want %q", next.Event.Text, "after restart")
	}
}

func TestServeRejectsBadInput(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	c := inst.newChat(t)
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"not json", "hello", http.StatusBadRequest},
		{"bad id", `{"id":"../x","text":"hi"}`, http.StatusBadRequest},
		{"too large", `{"text":"` + strings.Repeat("x", 70<<10) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		resp, err := c.client.Post(inst.URL+"/api/messages", "application/json", bytes.NewReader([]byte(tc.body)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d; want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	// No session cookie: refused.
	resp, err := http.Post(inst.URL+"/api/messages", "application/json", strings.NewReader(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no session: status %d; want 401", resp.StatusCode)
	}
	// Media links: each answer is one only the media handler gives (its
	// status and its words), so a probe that missed the route would fail.
	for _, tc := range []struct {
		path string
		want int
		says string
	}{
		{"/images/nope", http.StatusBadRequest, "bad image name"},
		{"/images/..%2fetc%2fpasswd", http.StatusBadRequest, "bad image name"},
		{"/images/abc.gif", http.StatusBadRequest, "bad image name"},
		{"/images/0123456789abcdef.jpeg", http.StatusForbidden, "image link invalid or expired"},
		{"/images/0123456789abcdef.jpeg?e=9999999999&s=AAAAAAAAAAAAAAAAAAAAAA", http.StatusForbidden, "image link invalid or expired"},
		{"/files/nope/a.txt", http.StatusBadRequest, "bad file name"},
		{"/files/0123456789abcdef/a%20b%22.txt", http.StatusBadRequest, "bad file name"},
		{"/files/0123456789abcdef/a.txt", http.StatusForbidden, "file link invalid or expired"},
	} {
		resp, err := http.Get(inst.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.says) {
			t.Errorf("GET %s: %d %q; want %d %q", tc.path, resp.StatusCode, body, tc.want, tc.says)
		}
	}
}

// Bound beyond loopback, the web chat wants its token.
func TestWebChatTokenOffLoopback(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_HOST=0.0.0.0", "TEXTSLASH_WEB_TOKEN=s3cret")
	for _, path := range []string{"/", "/api/events"} {
		resp, err := http.Get(inst.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without token: %d; want 401", path, resp.StatusCode)
		}
	}
	resp, err := http.Get(inst.URL + "/?token=wrong")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d; want 401", resp.StatusCode)
	}
	c := inst.openChat(t, "/?token=s3cret") // the token becomes a cookie; later calls need no query
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	c.send("echo ok")
	if ev := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" }); ev.Event.Text != "ok" {
		t.Errorf("reply %q; want ok", ev.Event.Text)
	}
}

// With NATS_URL, textslash embeds no server and uses the given one; two
// all-in-ones on one NATS share the work and the state.
func TestServeWithNATSURL(t *testing.T) {
	a := startServe(t, "TEXTSLASH_AGENT=shell")
	// b logs in to a's embedded NATS as admin, with the lines a wrote for the nats CLI.
	login := natsLogin(t, a.Data, "admin")
	b := startServe(t, "TEXTSLASH_AGENT=shell",
		"NATS_URL="+login["NATS_URL"], "NATS_USER="+login["NATS_USER"], "NATS_PASSWORD="+login["NATS_PASSWORD"])
	out, _ := os.ReadFile(b.Log)
	if !strings.Contains(string(out), "connected to NATS") || strings.Contains(string(out), `"svc":"nats"`) {
		t.Errorf("instance b embedded a server or did not connect to NATS_URL:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(b.Data, "nats")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("instance b wrote NATS logins (%v); want none for a NATS_URL", err)
	}
	c := b.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	c.send("sleep 0.2; echo one")
	c.send("echo two")
	var replies []string
	for len(replies) < 2 {
		ev := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
		replies = append(replies, ev.Event.Text)
	}
	if !slices.Equal(replies, []string{"one", "two"}) {
		t.Errorf("replies %q; want one, two", replies)
	}
}

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"serve", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("serve --help exit %d", code)
	}
	for _, env := range []string{"TEXTSLASH_DATA", "TEXTSLASH_NATS_LISTEN", "NATS_URL", "PORT", "TEXTSLASH_AGENT", "TEXTSLASH_CLAUDE_BIN", "TEXTSLASH_WORKSPACES", "TEXTSLASH_AGENT_USER", "TEXTSLASH_WEB_TOKEN"} {
		if !strings.Contains(errOut.String(), "$"+env) {
			t.Errorf("serve --help does not mention $%s", env)
		}
	}
	out.Reset()
	if code := run([]string{"--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "textslash serve") {
		t.Errorf("--help exit %d:\n%s", code, out.String())
	}
	if code := run([]string{"bogus"}, &out, &errOut); code != 2 {
		t.Errorf("unknown command exit %d; want 2", code)
	}
	t.Setenv("TEXTSLASH_TIMEOUT", "soon")
	errOut.Reset()
	if code := run([]string{"serve"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "TEXTSLASH_TIMEOUT") {
		t.Errorf("bad TEXTSLASH_TIMEOUT: exit %d, %q", code, errOut.String())
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// Any command line is an agent: the message on its stdin, its stdout the
// reply, its marker lines progress and an approval request.
func TestCommandAgent(t *testing.T) {
	script := `read -r msg; echo "::progress:: thinking about $msg"; echo "you said: $msg"; echo "::approval::"`
	inst := startServe(t, "TEXTSLASH_AGENT="+script)
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	id := c.send("hello")
	var progress []string
	done := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool {
		if ev.Kind == "progress" {
			progress = append(progress, ev.Event.Text)
		}
		return ev.Kind == "done" && ev.Event.JobID == id
	}).Event
	if !strings.HasPrefix(done.Text, "you said: hello\n\n") || !done.Approval || !strings.Contains(done.Text, "Reply approve") {
		t.Errorf("done %q, approval %t; want the reply and an approval request", done.Text, done.Approval)
	}
	if !slices.Contains(progress, "thinking about hello") {
		t.Errorf("progress %q", progress)
	}
}
