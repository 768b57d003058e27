package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium is the browser for tests: $TEXTSLASH_TEST_CHROMIUM or Debian's.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("TEXTSLASH_TEST_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("no Chromium at %s: scripts/test installs it", path)
		}
		t.Skipf("no Chromium at %s: scripts/test installs it", path)
	}
	return path
}

// browser starts headless Chromium as root can run it on this machine.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(420, 860),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// The web chat page, driven in real Chromium: a person types `echo hello`
// and the reply appears live; after a reload the conversation is still
// there; a multi-line reply keeps its lines.
func TestWebChatInBrowser(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	ctx := browser(t)
	replies := `[...document.querySelectorAll('#messages .reply .text')].map(e => e.innerText)`

	if err := chromedp.Do(ctx,
		chromedp.Navigate(inst.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "echo hello"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.WaitVisible(chromedp.CSS("#messages .reply")),
	); err != nil {
		t.Fatalf("send echo hello: %v", err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](replies))
	if err != nil || len(got) != 1 || strings.TrimSpace(got[0]) != "hello" {
		t.Errorf("replies %q (%v); want [hello]", got, err)
	}
	all, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("messages")))
	if err != nil || !strings.Contains(all, "echo hello") {
		t.Errorf("the conversation %q (%v) does not show the sent message", all, err)
	}

	// History survives a reload (the page replays the session's events).
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#messages .reply"))); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](replies)); err != nil || len(got) != 1 || strings.TrimSpace(got[0]) != "hello" {
		t.Errorf("after reload, replies %q (%v); want [hello]", got, err)
	}

	// A second message: a second bubble, its lines kept.
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("input"), `printf 'a\nb'`),
		chromedp.Click(chromedp.ID("send")),
	); err != nil {
		t.Fatalf("second message: %v", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](replies+`.length >= 2`)); err != nil {
		t.Fatalf("second reply never shown: %v", err)
	}
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](replies)); err != nil || len(got) != 2 || got[1] != "a\nb" {
		t.Errorf("replies %q (%v); want the second to be %q", got, err, "a\nb")
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	_ = os.WriteFile(filepath.Join(os.TempDir(), "textslash-webchat.png"), png, 0o644)
}
