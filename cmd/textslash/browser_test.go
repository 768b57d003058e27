package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/textslash/textslash/runner/shot/shottest"
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
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "echo hello"),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatalf("open the page and send: %v", err)
	}
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
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("input"), `printf 'a\nb'`),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatalf("send the second message: %v", err)
	}
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
