package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/runner/preview"
)

// In real Chromium, a cookie that one person's app sets through its link
// for the links' shared name (Domain=preview.localhost) stays on that
// link: another person's link, open in the same browser, is not sent it.
func TestPreviewCookieStaysOnItsLinkInBrowser(t *testing.T) {
	tab := browser(t, 2*time.Minute) // first: skips without Chromium
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			w.Header().Add("Set-Cookie", "fix=attacker; Domain=preview.localhost; Path=/")
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><title>app</title><pre id=c>cookie=%s</pre>", r.Header.Get("Cookie"))
	}))
	t.Cleanup(app.Close)
	s, err := preview.Listen(preview.Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var d net.Dialer
	port := app.Listener.Addr().(*net.TCPAddr).Port
	a, _ := s.Open(preview.Target{Person: "web.a", Home: "ha", Port: port, Dial: d.DialContext})
	b, _ := s.Open(preview.Target{Person: "web.b", Home: "hb", Port: port, Dial: d.DialContext})

	seen := func(url string) string {
		t.Helper()
		if err := chromedp.Do(tab, chromedp.Navigate(url)); err != nil {
			t.Fatalf("open %s: %v", url, err)
		}
		got, err := chromedp.Run(tab, chromedp.Text(chromedp.ID("c")))
		if err != nil {
			t.Fatalf("read %s: %v", url, err)
		}
		return got
	}
	seen(a.URL + "set")
	if got := seen(a.URL); got != "cookie=fix=attacker" {
		t.Fatalf("link A's own page: %q; want its cookie sent back to it", got)
	}
	if got := seen(b.URL); got != "cookie=" {
		t.Errorf("link B's page: %q; want none of link A's cookies", got)
	}
}
