package main

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The empty web chat says what to type; the line goes once the
// conversation starts.
func TestWebChatEmptyStateInBrowser(t *testing.T) {
	ctx := browser(t, 60*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	if err := chromedp.Do(ctx, chromedp.Navigate(inst.URL+"/")); err != nil {
		t.Fatal(err)
	}
	const shown = `(want) => { const e = document.getElementById('empty'); return !!e && e.offsetParent !== null && e.innerText.includes(want); }`
	waitPage(ctx, t, shown, "Send a message to start: try help.", "the empty chat's hint")
	sendInPage(ctx, t, "echo first")
	waitPage(ctx, t, replyHas, "first", "the reply")
	const gone = `() => { const e = document.getElementById('empty'); return !e || e.offsetParent === null; }`
	waitPage(ctx, t, gone, "", "the hint gone once the chat has messages")
}
