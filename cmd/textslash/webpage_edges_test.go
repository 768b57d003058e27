package main

import (
	"strings"
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

// A task the person scheduled runs as textslash's own: a notice in plain
// text, not a bubble of the person's in curly quotes.
func TestWebChatScheduledTaskIsTextslashsInBrowser(t *testing.T) {
	ctx := browser(t, 60*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	if err := chromedp.Do(ctx, chromedp.Navigate(inst.URL+"/")); err != nil {
		t.Fatal(err)
	}
	sendInPage(ctx, t, "in 2s echo sched-ran")
	waitPage(ctx, t, replyHas, "sched-ran", "the scheduled task's reply")
	mine, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#messages .mine')].map(e => e.innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mine {
		if strings.Contains(m, "sched-ran") && !strings.HasPrefix(m, "in 2s") {
			t.Errorf("the person's bubbles %q; want none for the scheduled run", mine)
		}
	}
	notices, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#messages .notice')].map(e => e.innerText)`))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range notices {
		found = found || strings.HasPrefix(n, "Scheduled task ") && strings.Contains(n, "echo sched-ran")
	}
	if !found {
		t.Errorf("notices %q; want one saying the scheduled task runs", notices)
	}
}

// The attach and microphone buttons draw their icons themselves (inline
// SVG), with names for screen readers: no emoji font needed.
func TestWebChatToolIconsInBrowser(t *testing.T) {
	ctx := browser(t, 60*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	if err := chromedp.Do(ctx, chromedp.Navigate(inst.URL+"/"), chromedp.WaitVisible(chromedp.ID("input"))); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"attach", "mic"} {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`(() => {
			const b = document.getElementById('`+id+`');
			const svg = b.querySelector('svg');
			const box = svg ? svg.getBoundingClientRect() : null;
			return { label: b.getAttribute('aria-label') || '', text: b.textContent.trim(), svg: !!svg,
				hidden: svg ? svg.getAttribute('aria-hidden') || '' : '', w: box ? box.width : 0 };
		})()`))
		if err != nil {
			t.Fatal(err)
		}
		if got["svg"] != true || got["text"] != "" || got["label"] == "" || got["hidden"] != "true" || got["w"].(float64) < 10 {
			t.Errorf("#%s: %v; want an inline SVG icon (aria-hidden, drawn), no emoji text, an aria-label", id, got)
		}
	}
}
