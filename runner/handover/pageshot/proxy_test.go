package pageshot

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// forwardProxy is an HTTP proxy that answers every absolute-URI request
// itself with a green page and records the hosts asked for; a request that
// is not a proxy's (a plain GET /) is refused.
type forwardProxy struct {
	*httptest.Server
	mu    sync.Mutex
	hosts []string
}

func newForwardProxy(t *testing.T) *forwardProxy {
	p := &forwardProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.hosts = append(p.hosts, r.URL.Host)
		p.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><body style="margin:0;background:#0f0;height:100vh">`)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *forwardProxy) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.hosts)
}

// A shot through a proxy reaches what only the proxy can: a name that
// resolves nowhere, and a loopback address (the proxy's, not the
// browser's). Without the proxy the same shot fails, and the warm tab of
// the same profile does not go through it.
func TestCaptureThroughProxy(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	proxy := newForwardProxy(t)
	// A loopback port where nothing listens (one Chromium deems safe).
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	loopback := closed.Listener.Addr().String()
	for _, url := range []string{"http://nothing.invalid/", "http://" + loopback + "/"} {
		s, err := b.Capture(t.Context(), Options{URL: url, Proxy: proxy.URL, Profile: "web.a"})
		if err != nil {
			t.Fatalf("%s through the proxy: %v", url, err)
		}
		m := checkJPEG(t, s, DefaultMaxBytes)
		if r, g, bl, _ := m.At(s.Width/2, s.Height/2).RGBA(); r > 0x4000 || g < 0xc000 || bl > 0x4000 {
			t.Errorf("%s: middle pixel is rgb(%d,%d,%d); want the proxy's green page", url, r>>8, g>>8, bl>>8)
		}
	}
	for _, host := range []string{"nothing.invalid", loopback} {
		if !slices.Contains(proxy.asked(), host) {
			t.Errorf("the proxy was asked for %q; want %s among them", proxy.asked(), host)
		}
	}
	before := len(proxy.asked())
	for _, profile := range []string{"web.a", "web.b"} {
		for _, url := range []string{"http://nothing.invalid/", "http://" + loopback + "/"} {
			_, err := b.Capture(t.Context(), Options{URL: url, Profile: profile})
			if !errors.Is(err, chromedp.ErrPageLoad) {
				t.Errorf("%s %s without the proxy: got %v; want ErrPageLoad", profile, url, err)
			}
		}
	}
	if after := proxy.asked(); len(after) != before {
		t.Errorf("shots without the proxy reached it: %q", after[before:])
	}
}
