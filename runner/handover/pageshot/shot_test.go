package pageshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
)

// newBrowser is a Browser on the test's Chromium, closed at the end.
func newBrowser(t testing.TB, timeout time.Duration) *Browser {
	t.Helper()
	b := New(Config{Bin: shottest.Chromium(t), NoSandbox: os.Geteuid() == 0, Timeout: timeout})
	t.Cleanup(func() { b.Close() })
	return b
}

// pid is the process id of the running browser, or 0.
func (b *Browser) pid() int { return int(b.pidNow.Load()) }

const simplePage = `<!doctype html><meta name=viewport content="width=device-width">
<title>t</title><body style="margin:0;font:16px sans-serif">
<h1 style="background:#2a6;color:#fff;padding:16px">textslash</h1>
<p style="padding:16px">A page to take a picture of.</p>`

// tallPage is about 12,000 CSS px of coloured blocks with text in them.
func tallPage() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><meta name=viewport content="width=device-width"><body style="margin:0;font:15px sans-serif">`)
	for i := range 200 {
		fmt.Fprintf(&b, `<div style="height:60px;background:hsl(%d,60%%,%d%%);padding:0 12px;overflow:hidden">`+
			`<b>Row %d</b> Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor %d.</div>`,
			(i*37)%360, 35+(i*13)%40, i, i*i)
	}
	return b.String()
}

// pages serves the test pages: "/" (small), "/tall" (12,000 px of coloured
// rows), "/huge" (61,000 px, no viewport meta: laid out 980 px wide),
// "/raf", "/alert", and "/hang", which sends half a page and never finishes
// until the test ends.
func pages(t testing.TB) *httptest.Server {
	t.Helper()
	end := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, simplePage) })
	tall := tallPage()
	mux.HandleFunc("/tall", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, tall) })
	// /raf is red until an animation frame has run, then green: it is
	// green only in a tab that is drawn like a visible one.
	mux.HandleFunc("/raf", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><body style="margin:0;background:#f00;height:100vh">
<script>addEventListener('load', () => requestAnimationFrame(() => document.body.style.background = document.visibilityState == 'visible' ? '#0f0' : '#00f'))</script>`)
	})
	mux.HandleFunc("/alert", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><body style="margin:0;background:#0f0;height:100vh"><script>alert('hi'); confirm('sure?')</script>`)
	})
	huge := strings.Repeat(`<div style="height:60px;border-bottom:1px solid #ccc">row</div>`, 1000)
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, huge) })
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><body><p>loading`)
		w.(http.Flusher).Flush()
		select {
		case <-end:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(end) }) // before srv.Close, which waits for handlers
	return srv
}

// checkJPEG decodes the shot and checks what it claims about itself.
func checkJPEG(t *testing.T, s Shot, maxBytes int) image.Image {
	t.Helper()
	if len(s.JPEG) > maxBytes {
		t.Errorf("got %d bytes; want ≤ %d", len(s.JPEG), maxBytes)
	}
	m, err := jpeg.Decode(bytes.NewReader(s.JPEG))
	if err != nil {
		t.Fatalf("decode the JPEG: %v", err)
	}
	if b := m.Bounds(); b.Dx() != s.Width || b.Dy() != s.Height {
		t.Errorf("image is %d×%d; Shot says %d×%d", b.Dx(), b.Dy(), s.Width, s.Height)
	}
	return m
}

// Mobile and desktop shots, one after the other in the warm tab: each at
// its own size. The full browser (Debian's chromium, used when the headless
// shell is not installed) takes them too.
func TestCaptureViewport(t *testing.T) {
	browsers := map[string]*Browser{"default": newBrowser(t, 20*time.Second)}
	if full, err := exec.LookPath("chromium"); err == nil {
		browsers["chromium"] = New(Config{Bin: full, NoSandbox: os.Geteuid() == 0})
		t.Cleanup(func() { browsers["chromium"].Close() })
	}
	srv := pages(t)
	for _, tc := range []struct {
		name          string
		desktop       bool
		width, height int
	}{
		{"mobile", false, 780, 1688},
		{"desktop", true, 2880, 1800},
		{"mobile-again", false, 780, 1688},
	} {
		for name, b := range browsers {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				start := time.Now()
				s, err := b.Capture(t.Context(), Options{URL: srv.URL + "/", Desktop: tc.desktop})
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%d×%d q%d scale %g: %d bytes in %v", s.Width, s.Height, s.Quality, s.Scale, len(s.JPEG), time.Since(start))
				checkJPEG(t, s, DefaultMaxBytes)
				if s.Width != tc.width || s.Height != tc.height || s.Scale != 2 || s.Quality != 75 {
					t.Errorf("got %d×%d scale %g q%d; want %d×%d scale 2 q75", s.Width, s.Height, s.Scale, s.Quality, tc.width, tc.height)
				}
			})
		}
	}
}

func TestCaptureFullPage(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	srv := pages(t)
	for _, tc := range []struct {
		name      string
		path      string
		maxBytes  int
		cssHeight int // of the image, at scale 1; 0: the simple page's content, well under the viewport's
		truncated bool
		fit       bool
	}{
		{"12,000 px", "/tall", 0, 12000, false, false},
		{"12,000 px, 1 MB", "/tall", 1_000_000, 12000, false, false},
		{"61,000 px, 980 wide", "/huge", 0, maxFullHeight, true, false},
		{"shorter than the viewport", "/", 0, mobileHeight, false, false},
		{"12,000 px, fitted", "/tall", 0, 12000, false, true},
		{"shorter than the viewport, fitted", "/", 0, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			s, err := b.Capture(t.Context(), Options{URL: srv.URL + tc.path, FullPage: true, FitContent: tc.fit, MaxBytes: tc.maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d×%d q%d scale %g: %d bytes in %v", s.Width, s.Height, s.Quality, s.Scale, len(s.JPEG), time.Since(start))
			m := checkJPEG(t, s, orDefault(tc.maxBytes, DefaultMaxBytes))
			if tc.cssHeight == 0 {
				if css := float64(s.Height) / s.Scale; css < 80 || css > 300 {
					t.Errorf("got height %d at scale %g; want the content's, 80 to 300 CSS pixels", s.Height, s.Scale)
				}
			} else if want := int(float64(tc.cssHeight) * s.Scale); s.Height < want-2 || s.Height > want {
				t.Errorf("got height %d at scale %g; want %d", s.Height, s.Scale, want)
			}
			if want := int(mobileWidth * s.Scale); s.Width != want {
				t.Errorf("got width %d at scale %g; want %d", s.Width, s.Scale, want)
			}
			if s.Truncated != tc.truncated {
				t.Errorf("got Truncated %v; want %v", s.Truncated, tc.truncated)
			}
			// The bottom of the page is drawn.
			if tc.path == "/tall" {
				if c := m.At(s.Width/2, s.Height-int(30*s.Scale)); isWhite(c) {
					t.Errorf("bottom of the page is white")
				}
			}
		})
	}
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func isWhite(c interface{ RGBA() (r, g, b, a uint32) }) bool {
	r, g, b, _ := c.RGBA()
	return r > 0xf000 && g > 0xf000 && b > 0xf000
}

// A ceiling nothing fits under is an error, and no image.
func TestCaptureTooLarge(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	srv := pages(t)
	s, err := b.Capture(t.Context(), Options{URL: srv.URL + "/tall", FullPage: true, MaxBytes: 10_000})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v; want ErrTooLarge", err)
	}
	if s.JPEG != nil {
		t.Errorf("got %d bytes with the error; want none", len(s.JPEG))
	}
	t.Log(err)
}

// A page that never finishes loading fails within the timeout, and the
// browser takes the next shot.
func TestCaptureHangingPage(t *testing.T) {
	b := newBrowser(t, 2*time.Second)
	srv := pages(t)
	if _, err := b.Capture(t.Context(), Options{URL: srv.URL + "/"}); err != nil {
		t.Fatalf("warm-up shot: %v", err)
	}
	start := time.Now()
	_, err := b.Capture(t.Context(), Options{URL: srv.URL + "/hang"})
	took := time.Since(start)
	t.Logf("hanging page: %v after %v", err, took)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v; want an error that wraps context.DeadlineExceeded", err)
	}
	if took > 4*time.Second {
		t.Errorf("took %v; want about the 2 s timeout", took)
	}
	s, err := b.Capture(t.Context(), Options{URL: srv.URL + "/"})
	if err != nil {
		t.Fatalf("shot after the hanging page: %v", err)
	}
	checkJPEG(t, s, DefaultMaxBytes)
}

// The caller's ctx ends a shot too.
func TestCaptureCanceled(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	srv := pages(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := b.Capture(ctx, Options{URL: srv.URL + "/hang"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v; want context.DeadlineExceeded", err)
	}
	t.Logf("%v after %v", err, time.Since(start))
}

// Close ends the shot in progress, which fails with ErrClosed, and so do
// later Captures.
func TestCloseDuringCapture(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	arrived, end := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><body><p>loading`)
		w.(http.Flusher).Flush()
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-end:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(end) }) // before srv.Close, which waits for handlers
	done := make(chan error, 1)
	go func() {
		_, err := b.Capture(t.Context(), Options{URL: srv.URL})
		done <- err
	}()
	select {
	case <-arrived:
	case err := <-done:
		t.Fatalf("shot ended before the page was asked for: %v", err)
	}
	start := time.Now()
	b.Close()
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Errorf("shot in progress: got %v; want ErrClosed", err)
	}
	t.Logf("Close and the shot's end after %v", time.Since(start))
	if _, err := b.Capture(t.Context(), Options{URL: srv.URL}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: got %v; want ErrClosed", err)
	}
}

// A killed browser is replaced by the next Capture.
func TestCaptureAfterBrowserKilled(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	srv := pages(t)
	if _, err := b.Capture(t.Context(), Options{URL: srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	old := b.pid()
	if old == 0 {
		t.Fatal("no browser process after a shot")
	}
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s, err := b.Capture(t.Context(), Options{URL: srv.URL + "/"})
	if err != nil {
		t.Fatalf("shot after the kill: %v", err)
	}
	checkJPEG(t, s, DefaultMaxBytes)
	if now := b.pid(); now == old || now == 0 {
		t.Errorf("browser pid %d after the kill; want a new one (was %d)", now, old)
	}
	t.Logf("shot in a new browser after %v", time.Since(start))
}

// A browser that dies under a shot is replaced, and the fresh one takes
// the shot once more.
func TestCaptureBrowserKilledDuringShot(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	// The first load of the page draws and never ends; the next is whole.
	var loads atomic.Int32
	hit, end := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if loads.Add(1) > 1 {
			fmt.Fprint(w, simplePage)
			return
		}
		fmt.Fprint(w, `<!doctype html><body><p>loading`)
		w.(http.Flusher).Flush()
		hit <- struct{}{}
		select {
		case <-end:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(end) }) // before srv.Close, which waits for handlers

	killed := make(chan int, 1)
	go func() {
		<-hit
		old := b.pid()
		syscall.Kill(old, syscall.SIGKILL)
		killed <- old
	}()
	s, err := b.Capture(t.Context(), Options{URL: srv.URL})
	if err != nil {
		t.Fatalf("shot the browser died under: got %v; want it taken in a fresh browser", err)
	}
	checkJPEG(t, s, DefaultMaxBytes)
	old := <-killed
	if now := b.pid(); now == old || now == 0 {
		t.Errorf("browser pid %d after the kill; want a new one (was %d)", now, old)
	}
	if n := loads.Load(); n != 2 {
		t.Errorf("page loaded %d times; want 2 (the shot taken once more)", n)
	}
}

func TestCaptureErrors(t *testing.T) {
	t.Run("no browser", func(t *testing.T) {
		b := New(Config{Bin: "/nonexistent/chromium"})
		defer b.Close()
		if _, err := b.Capture(t.Context(), Options{URL: "http://127.0.0.1:1/"}); !errors.Is(err, ErrNoChromium) {
			t.Errorf("got %v; want ErrNoChromium", err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		b := New(Config{})
		b.Close()
		if _, err := b.Capture(t.Context(), Options{URL: "http://127.0.0.1:1/"}); !errors.Is(err, ErrClosed) {
			t.Errorf("got %v; want ErrClosed", err)
		}
	})
	t.Run("sandbox as root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("not root: the sandbox works")
		}
		b := New(Config{Bin: shottest.Chromium(t)}) // no NoSandbox
		defer b.Close()
		_, err := b.Capture(t.Context(), Options{URL: "http://127.0.0.1:1/"})
		if err == nil {
			t.Fatal("got no error; want Chromium's refusal to run as root with its sandbox")
		}
		t.Log(err)
	})
	t.Run("refused", func(t *testing.T) {
		b := newBrowser(t, 20*time.Second)
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		_, err := b.Capture(t.Context(), Options{URL: closed.URL})
		if !errors.Is(err, chromedp.ErrPageLoad) {
			t.Errorf("got %v; want ErrPageLoad", err)
		}
		t.Log(err)
	})
}

// The shot's tab is drawn like a visible tab: animation frames run, also
// when Captures come in parallel.
func TestCaptureVisible(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	srv := pages(t)
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			s, err := b.Capture(t.Context(), Options{URL: srv.URL + "/raf"})
			if err == nil {
				var m image.Image
				if m, err = jpeg.Decode(bytes.NewReader(s.JPEG)); err == nil {
					if r, g, bl, _ := m.At(s.Width/2, s.Height/2).RGBA(); r > 0x4000 || g < 0xc000 || bl > 0x4000 {
						err = fmt.Errorf("middle pixel is rgb(%d,%d,%d); want green (red: no animation frame, blue: hidden)", r>>8, g>>8, bl>>8)
					}
				}
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A page that opens dialogs while loading still loads.
func TestCaptureDialogs(t *testing.T) {
	b := newBrowser(t, 5*time.Second)
	srv := pages(t)
	if _, err := b.Capture(t.Context(), Options{URL: srv.URL + "/alert"}); err != nil {
		t.Fatal(err)
	}
}

// A tab whose renderer dies fails at once with ErrPageCrashed, and the
// browser takes the next shot.
func TestCaptureRendererKilled(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	srv := pages(t)
	if _, err := b.Capture(t.Context(), Options{URL: srv.URL + "/"}); err != nil {
		t.Fatal(err)
	}
	// A page that has started to draw and never ends loading.
	hit := make(chan struct{}, 1)
	end := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><body><p>drawing`)
		w.(http.Flusher).Flush()
		hit <- struct{}{}
		select {
		case <-end:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(end) })

	root := b.pid()
	go func() {
		<-hit
		time.Sleep(200 * time.Millisecond) // the renderer parses what came
		for _, pid := range renderers(root) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	start := time.Now()
	_, err := b.Capture(t.Context(), Options{URL: slow.URL})
	if !errors.Is(err, ErrPageCrashed) {
		t.Errorf("got %v; want ErrPageCrashed", err)
	}
	t.Logf("%v after %v", err, time.Since(start))
	if _, err := b.Capture(t.Context(), Options{URL: srv.URL + "/"}); err != nil {
		t.Fatalf("shot after the crash: %v", err)
	}
}

// renderers are the pids of the page renderers under the browser root.
func renderers(root int) []int {
	ps := procs()
	var found []int
	for pid := range ps {
		if pid == root || !under(ps, pid, root) {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if bytes.Contains(cmd, []byte("--type=renderer")) && !bytes.Contains(cmd, []byte("--top-chrome-webui")) {
			found = append(found, pid)
		}
	}
	return found
}

// A shot shows the page as it is now: a stylesheet that changed since the
// last shot is fetched again, cache headers or not (an agent edits the app
// between shots).
func TestCaptureNotCached(t *testing.T) {
	b := newBrowser(t, 20*time.Second)
	var colour atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/style.css" {
			w.Header().Set("Content-Type", "text/css")
			w.Header().Set("Cache-Control", "max-age=3600")
			w.Header().Set("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT")
			fmt.Fprintf(w, "body { background: %s }", colour.Load())
			return
		}
		w.Header().Set("Cache-Control", "max-age=3600")
		fmt.Fprint(w, `<!doctype html><link rel=stylesheet href=/style.css><body style="margin:0;height:100vh">`)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		colour  string
		r, g, b uint32
	}{{"#f00", 255, 0, 0}, {"#00f", 0, 0, 255}} {
		colour.Store(tc.colour)
		s, err := b.Capture(t.Context(), Options{URL: srv.URL + "/"})
		if err != nil {
			t.Fatal(err)
		}
		m := checkJPEG(t, s, DefaultMaxBytes)
		r, g, bl, _ := m.At(10, 10).RGBA()
		if d := max(diff(r>>8, tc.r), diff(g>>8, tc.g), diff(bl>>8, tc.b)); d > 40 {
			t.Errorf("with %s: got rgb(%d,%d,%d); want %s", tc.colour, r>>8, g>>8, bl>>8, tc.colour)
		}
	}
}

func diff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}
