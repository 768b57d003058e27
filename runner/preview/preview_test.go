package preview

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// app is a dev server on the host's loopback standing in for one in a
// home (the e2e test in cmd/textslash has the real home): it answers
// with what it saw, streams events, redirects, and takes WebSocket-style
// upgrades, echoing one line.
func app(t *testing.T) (port int, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	mux := http.NewServeMux()
	mux.HandleFunc("/seen", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "host=%s cookie=%s origin=%s trace=%s", r.Host, r.Header.Get("Cookie"), r.Header.Get("Origin"), r.Header.Get("Textslash-Trace"))
	})
	mux.HandleFunc("/go", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+r.Host+"/seen", http.StatusFound)
	})
	mux.HandleFunc("/cookie", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "fix=1; Domain=preview.localhost; Path=/")
		w.Header().Add("Set-Cookie", "own=2; HttpOnly; domain=.PREVIEW.localhost ;SameSite=Lax")
		w.Header().Add("Set-Cookie", "plain=3; Path=/app")
	})
	mux.HandleFunc("/tick", func(w http.ResponseWriter, r *http.Request) {
		for {
			fmt.Fprintln(w, "tick")
			w.(http.Flusher).Flush()
			select {
			case <-time.After(50 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select { // the first event reaches the client while this one waits
		case <-release:
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "want an upgrade", http.StatusBadRequest)
			return
		}
		c, buf, _ := http.NewResponseController(w).Hijack()
		defer c.Close()
		fmt.Fprint(buf, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		buf.Flush()
		line, _ := buf.ReadString('\n')
		fmt.Fprint(buf, "echo "+line)
		buf.Flush()
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	var d net.Dialer
	return srv.Listener.Addr().(*net.TCPAddr).Port, d.DialContext
}

func serve(t *testing.T) *Server {
	s, err := Listen(Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// get asks the preview server for link's path, as a browser at its URL.
func get(t *testing.T, s *Server, linkURL, path string, h http.Header) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+s.Addr()+path, nil)
	req.Host = strings.TrimSuffix(strings.TrimPrefix(linkURL, "http://"), "/")
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// The app sees localhost:<port>, its own origin, and none of textslash's
// cookies or headers; its redirects to itself come back to the link.
func TestPreviewRequestAsTheAppWantsIt(t *testing.T) {
	port, dial := app(t)
	s := serve(t)
	l, err := s.Open(Target{Person: "web.a", Home: "h1", Port: port, Dial: dial})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(l.URL, "http://"+l.ID+".preview.localhost:") || len(l.ID) < 26 {
		t.Errorf("link %q (id %q); want http://<26+ chars>.preview.localhost:<port>/", l.URL, l.ID)
	}
	origin := strings.TrimSuffix(l.URL, "/")
	code, body, _ := get(t, s, l.URL, "/seen", http.Header{
		"Cookie": {"ts_web=secret.mac; app=1; ts_token=tok; __Host-ts_web=secret.mac"}, "Origin": {origin}, "Textslash-Trace": {"abc"}})
	want := fmt.Sprintf("host=localhost:%d cookie=app=1 origin=http://localhost:%d trace=", port, port)
	if code != 200 || body != want {
		t.Errorf("the app saw %d %q; want %q", code, body, want)
	}
	code, _, h := get(t, s, l.URL, "/go", nil)
	if loc := h.Get("Location"); code != http.StatusFound || loc != origin+"/seen" {
		t.Errorf("redirect %d to %q; want to %q", code, loc, origin+"/seen")
	}
	if h.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("Referrer-Policy %q: the link would leak as a referrer", h.Get("Referrer-Policy"))
	}
}

// Server-sent events arrive as sent, and an upgraded connection (a
// dev server's WebSocket) carries data both ways.
func TestPreviewStreamsAndUpgrades(t *testing.T) {
	port, dial := app(t)
	s := serve(t)
	l, _ := s.Open(Target{Person: "web.a", Home: "h1", Port: port, Dial: dial})
	host := strings.TrimSuffix(strings.TrimPrefix(l.URL, "http://"), "/")

	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /events HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the first event did not arrive while the stream is open: %v", err)
		}
		if line == "data: first\n" {
			break
		}
	}

	ws, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	fmt.Fprintf(ws, "GET /ws HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", host)
	wr := bufio.NewReader(ws)
	resp, err := http.ReadResponse(wr, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	fmt.Fprint(ws, "reload\n")
	if got, _ := wr.ReadString('\n'); got != "echo reload\n" {
		t.Errorf("through the upgraded connection: %q; want the echo", got)
	}
}

// A link that ended (off, its home gone, its TTL), an unknown one, and a
// port nothing listens on each get a page saying so.
func TestPreviewEndsAndSaysSo(t *testing.T) {
	port, dial := app(t)
	s := serve(t)
	open := func(person, home string, port int) Link {
		l, err := s.Open(Target{Person: person, Home: home, Port: port, Dial: dial})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b, c, _ := open("web.a", "h1", port), open("web.b", "h2", port), open("web.c", "h3", port), open("web.c", "h3", port)
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	nobody := free.Addr().(*net.TCPAddr).Port
	free.Close()
	none := open("web.d", "h4", nobody)
	if got := s.List("web.c"); len(got) != 2 {
		t.Errorf("web.c's links: %d; want 2", len(got))
	}
	if n := s.Off("web.a"); n != 1 {
		t.Errorf("off ended %d; want 1", n)
	}
	s.HomeGone("h2")
	s.links.now = func() time.Time { return time.Now().Add(DefaultTTL + time.Minute) }
	for _, tt := range []struct {
		url, want string
		code      int
	}{
		{a.URL, "turned off", http.StatusGone},
		{b.URL, "shut down", http.StatusGone},
		{c.URL, "expired", http.StatusGone},
		{"http://" + newID() + ".preview.localhost/", "not known", http.StatusNotFound},
	} {
		if code, body, _ := get(t, s, tt.url, "/seen", nil); code != tt.code || !strings.Contains(body, tt.want) {
			t.Errorf("%s: %d %q; want %d saying %q", tt.url, code, body, tt.code, tt.want)
		}
	}
	s.links.now = time.Now
	if code, body, _ := get(t, s, none.URL, "/", nil); code != http.StatusBadGateway || !strings.Contains(body, fmt.Sprintf("Nothing listens on port %d", nobody)) {
		t.Errorf("a port nothing listens on: %d %q", code, body)
	}
}

// A browser behind a proxy that speaks HTTP/2 without TLS to the preview
// server (h2c, prior knowledge) gets the app through it, as HTTP/2.
func TestPreviewServesHTTP2Cleartext(t *testing.T) {
	port, dial := app(t)
	s := serve(t)
	l, _ := s.Open(Target{Person: "web.a", Home: "h1", Port: port, Dial: dial})
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &protos}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "http://"+s.Addr()+"/seen", nil)
	req.Host = strings.TrimSuffix(strings.TrimPrefix(l.URL, "http://"), "/")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("an h2c request: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || !strings.HasPrefix(string(body), fmt.Sprintf("host=localhost:%d ", port)) {
		t.Errorf("over h2c: %s %d %q; want HTTP/2 200 from the app", resp.Proto, resp.StatusCode, body)
	}
}

// Every cookie the app sets through a link is the link's own (host-only):
// one with a Domain would be sent to every other link under it, and to
// the chat when the links share its name.
func TestPreviewCookiesStayOnTheLink(t *testing.T) {
	port, dial := app(t)
	s := serve(t)
	l, _ := s.Open(Target{Person: "web.a", Home: "h1", Port: port, Dial: dial})
	_, _, h := get(t, s, l.URL, "/cookie", nil)
	want := []string{"fix=1; Path=/", "own=2; HttpOnly;SameSite=Lax", "plain=3; Path=/app"}
	if got := h.Values("Set-Cookie"); !slices.Equal(got, want) {
		t.Errorf("Set-Cookie through the link: %q; want %q (no Domain)", got, want)
	}
}

// Streams opened through a link end with it: a streaming response and an
// upgraded connection once the link is turned off or its home goes, a
// stream once the link expires.
func TestPreviewStreamsEndWithTheLink(t *testing.T) {
	port, dial := app(t)
	for _, tt := range []struct {
		name string
		ttl  time.Duration
		end  func(s *Server)
	}{
		{"off", 0, func(s *Server) { s.Off("web.a") }},
		{"home gone", 0, func(s *Server) { s.HomeGone("h1") }},
		{"expired", 3 * time.Second, func(*Server) {}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Listen(Config{TTL: tt.ttl}, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			l, _ := s.Open(Target{Person: "web.a", Home: "h1", Port: port, Dial: dial})
			host := strings.TrimSuffix(strings.TrimPrefix(l.URL, "http://"), "/")
			open := func(req string) (net.Conn, *bufio.Reader) {
				c, err := net.Dial("tcp", s.Addr())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				c.SetDeadline(time.Now().Add(time.Minute)) // a guard: the test fails, not hangs
				fmt.Fprintf(c, req, host)
				r := bufio.NewReader(c)
				resp, err := http.ReadResponse(r, nil)
				if err != nil || resp.StatusCode/100 == 4 || resp.StatusCode/100 == 5 {
					t.Fatalf("%q: %v %v", req, resp, err)
				}
				return c, r
			}
			_, stream := open("GET /tick HTTP/1.1\r\nHost: %s\r\n\r\n")
			if line, err := stream.ReadString('\n'); err != nil || !strings.HasSuffix(line, "\n") {
				t.Fatalf("the stream's first line: %q %v", line, err)
			}
			_, wr := open("GET /ws HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			tt.end(s)
			for what, r := range map[string]*bufio.Reader{"the stream": stream, "the upgraded connection": wr} {
				for {
					if _, err := r.ReadString('\n'); err != nil {
						if errors.Is(err, os.ErrDeadlineExceeded) {
							t.Errorf("%s still open a minute after the link ended", what)
						}
						break
					}
				}
			}
		})
	}
}
