package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
)

// browser starts headless Chromium (as root, so without its sandbox) with a
// fresh profile and returns a tab that ends after timeout.
func browser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(shottest.Chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tab, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(tab, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc() // waits for the browser to exit, before t.TempDir goes
	})
	return ctx
}

// sendInPage types text into the web chat's box and presses send, once
// the page shows the box.
func sendInPage(ctx context.Context, t *testing.T, text string) {
	t.Helper()
	if err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), text),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatalf("send %q: %v", text, err)
	}
}

// Page queries, each a function of one argument (the text looked for).
const (
	// replyHas: a reply bubble contains the text.
	replyHas = `(want) => [...document.querySelectorAll('#messages .reply')].some(e => e.innerText.includes(want))`
	// mineHas: one of the person's own bubbles (class "mine") contains the text.
	mineHas = `(want) => [...document.querySelectorAll('#messages .mine')].some(e => e.innerText.includes(want))`
)

// waitPage waits until the page function returns true for arg; the tab's
// deadline bounds the wait.
func waitPage(ctx context.Context, t *testing.T, fn, arg, what string) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.PollFunction[bool](fn,
		chromedp.WithPollingArgs(arg),
		chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(0),
	))
	if err != nil {
		text, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate[string](`document.getElementById('messages').innerText`))
		t.Fatalf("%s: %v; the chat shows:\n%s", what, err, text)
	}
}

// The web chat page in real Chromium, as a person uses it: a message typed
// and sent, its reply shown live, the conversation still there after a
// reload, and a multi-line reply kept line by line.
func TestWebChatInBrowser(t *testing.T) {
	ctx := browser(t, 60*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")

	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(inst.URL+"/"),
	); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	sendInPage(ctx, t, "echo hello")
	waitPage(ctx, t, mineHas, "echo hello", "own bubble with `echo hello`")
	waitPage(ctx, t, replyHas, "hello", "reply with hello")

	// A reload replays the session's history: the reply, and the person's
	// own message (which the page keeps, as events do not carry it).
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("input"))); err != nil {
		t.Fatalf("reload: %v", err)
	}
	waitPage(ctx, t, replyHas, "hello", "reply with hello after a reload")
	waitPage(ctx, t, mineHas, "echo hello", "own bubble with `echo hello` after a reload")

	// A second message; its reply keeps both lines.
	sendInPage(ctx, t, `printf 'a\nb'`)
	waitPage(ctx, t, `(n) => document.querySelectorAll('#messages .reply').length >= Number(n)`, "2", "second reply")
	replies, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#messages .reply .text')].map(e => e.innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(replies) != 2 {
		t.Fatalf("got %d replies %q; want 2 (history shown once)", len(replies), replies)
	}
	if lines := strings.Fields(replies[1]); len(lines) != 2 || lines[0] != "a" || lines[1] != "b" {
		t.Errorf("second reply %q; want the lines a and b", replies[1])
	}
	if state, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("state"))); err != nil || state == "" {
		t.Errorf("state pill %q (%v); want a state", state, err)
	}

	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(t.TempDir(), "chat.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	// A copy outside the test's directories, to look at afterwards.
	if err := os.WriteFile(filepath.Join(os.TempDir(), "webchat.png"), png, 0o644); err != nil {
		t.Logf("copy the screenshot: %v", err)
	}
}

// A notice of several lines (help's list of keywords) shows in the web
// chat line by line, as the dispatcher wrote it, not run into one paragraph.
func TestWebChatNoticeKeepsLinesInBrowser(t *testing.T) {
	ctx := browser(t, 60*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")

	if err := chromedp.Do(ctx, chromedp.Navigate(inst.URL+"/")); err != nil {
		t.Fatal(err)
	}
	sendInPage(ctx, t, "help")
	const noticeHas = `(want) => [...document.querySelectorAll('#messages .notice')].some(e => e.innerText.includes(want))`
	waitPage(ctx, t, noticeHas, "Keywords:", "help's notice")
	// innerText is the text as rendered: collapsed white space has no
	// line breaks left in it.
	lines, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#messages .notice')].find(e => e.innerText.includes('Keywords:')).innerText.split('\n')`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(lines, "Keywords:") || len(lines) < 5 {
		t.Errorf("help's notice renders as %d lines %q; want its own lines, `Keywords:` one of them", len(lines), lines)
	}
	// A list of lines reads from one left edge; centred, each line starts
	// somewhere else.
	align, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`getComputedStyle([...document.querySelectorAll('#messages .notice')].find(e => e.innerText.includes('Keywords:'))).textAlign`))
	if err != nil {
		t.Fatal(err)
	}
	if align != "left" && align != "start" {
		t.Errorf("help's notice is aligned %q; want its lines on one left edge", align)
	}
}

// attackPage serves, on its own port of host, a page that posts a message
// to the web chat at chat with the person's cookies, as a page the agent
// built or a package it installed could; its title becomes "sent" once
// the request was made.
func attackPage(t *testing.T, host, chat, text string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	page := `<!doctype html><title>attack</title><script>
fetch(` + strconv.Quote(chat+"/api/messages") + `, {method: 'POST', mode: 'no-cors', credentials: 'include',
  headers: {'Content-Type': 'text/plain'}, body: JSON.stringify({text: ` + strconv.Quote(text) + `})})
  .finally(() => { document.title = 'sent'; });
</script>`
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(page))
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return fmt.Sprintf("http://%s:%d/", host, ln.Addr().(*net.TCPAddr).Port)
}

// Other pages open in the same browser — on another port of localhost
// (same site: the SameSite cookie goes along) or on another site — post
// to the web chat with the person's cookie; nothing they send runs, while
// the page's own messages do.
func TestWebChatOtherPagesInBrowser(t *testing.T) {
	ctx := browser(t, 90*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	chat := "http://localhost:" + envValue(inst.env, "PORT")

	if err := chromedp.Do(ctx, chromedp.Navigate(chat+"/")); err != nil {
		t.Fatal(err)
	}
	sendInPage(ctx, t, "echo first")
	waitPage(ctx, t, replyHas, "first", "reply to the page's own message")

	for _, attacker := range []string{
		attackPage(t, "localhost", chat, "echo pwned-same-site"),
		attackPage(t, "127.0.0.1", chat, "echo pwned-cross-site"),
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(attacker)); err != nil {
			t.Fatal(err)
		}
		waitPage(ctx, t, `(want) => document.title === want`, "sent", "the attacking page's request made ("+attacker+")")
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(chat+"/")); err != nil {
		t.Fatal(err)
	}
	sendInPage(ctx, t, "echo last")
	waitPage(ctx, t, replyHas, "last", "reply to the page's own message after the attacks")
	replies, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll('#messages .reply .text')].map(e => e.innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range replies {
		if strings.Contains(r, "pwned") {
			t.Errorf("another page's message ran: replies %q", replies)
		}
	}
	logs, _ := os.ReadFile(inst.Log)
	if n := strings.Count(string(logs), "web chat request from another origin refused"); n != 2 {
		t.Errorf("%d refusals logged; want 2 (same-site and cross-site)", n)
	}
}
