package preview

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// Config is what the preview server is started with.
type Config struct {
	// Addr is the host:port it listens on (default 127.0.0.1:0, a free
	// loopback port; textslash's default is 127.0.0.1:3002).
	Addr string
	// URL is the links' URL with "*" where a link's id goes: a wildcard
	// host behind a tunnel or proxy that reaches Addr
	// (https://*.preview.example.com). Default
	// http://*.preview.localhost:<Addr's port>, which browsers resolve to
	// loopback.
	URL string
	// TTL is how long a link lasts (default DefaultTTL).
	TTL time.Duration
}

// Server serves the preview links on a listener of their own.
type Server struct {
	links *links
	srv   *http.Server
	addr  string
	log   zerolog.Logger
}

// Listen listens on cfg.Addr and serves the links until Close.
func Listen(cfg Config, log zerolog.Logger) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("preview listener: %w", err)
	}
	pattern := cfg.URL
	if pattern == "" {
		pattern = fmt.Sprintf("http://*.preview.localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	}
	ls, err := newLinks(pattern, cfg.TTL)
	if err != nil {
		ln.Close()
		return nil, err
	}
	s := &Server{links: ls, addr: ln.Addr().String(), log: log.With().Str("part", "preview").Logger()}
	// HTTP/1.1, and HTTP/2 without TLS (h2c, with prior knowledge) for a
	// tunnel or proxy in front that speaks it: TLS, when there is any,
	// ends there.
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, Protocols: &protos}
	go func() { _ = s.srv.Serve(ln) }()
	s.log.Info().Str("addr", s.addr).Str("url", pattern).Dur("ttl_ms", ls.ttl).Msg("preview links served")
	return s, nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// Close stops serving; connections open (a WebSocket) are closed.
func (s *Server) Close() error { return s.srv.Close() }

// Open hands out a link to t, which lasts the server's TTL.
func (s *Server) Open(t Target) (Link, error) {
	l, err := s.links.open(t)
	if err == nil {
		s.log.Info().Str("user", t.Person).Str("home", t.Home).Int("port", t.Port).Time("expires", l.Expires).
			Str("link", l.ID[:4]).Msg("preview link opened")
	}
	return l, err
}

// Off ends the person's links; it returns how many.
func (s *Server) Off(person string) int {
	n := s.links.end(endOff, func(l *link) bool { return l.target.Person == person })
	s.log.Info().Str("user", person).Int("links", n).Msg("previews turned off")
	return n
}

// HomeGone ends the links into home, which was taken down.
func (s *Server) HomeGone(home string) {
	if n := s.links.end(endHome, func(l *link) bool { return l.target.Home == home }); n > 0 {
		s.log.Info().Str("home", home).Int("links", n).Msg("preview links ended with their home")
	}
}

// List is the person's open links, the newest first.
func (s *Server) List(person string) []Link { return s.links.list(person) }

// ServeHTTP passes a request for a link's host to the app it opens, or
// answers with a page saying why it does not.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := s.links.idOf(r.Host)
	if id == "" {
		page(w, http.StatusNotFound, "Not a preview link", "This address is not a preview link.")
		return
	}
	l, ended := s.links.find(id)
	switch {
	case l == nil:
		page(w, http.StatusNotFound, "Unknown preview link", "This preview link is not known here: it may be older than a day, or the server restarted. Ask for a new one: send preview and the port your app listens on.")
		return
	case ended != "":
		page(w, http.StatusGone, "Preview link ended", fmt.Sprintf("This preview link no longer opens: %s. Ask for a new one: send preview %d.", ended, l.Port))
		return
	}
	if l.target.Touch != nil {
		l.target.Touch()
	}
	// The request, a stream or an upgraded connection (a WebSocket) ends
	// with the link: the proxy closes the app's side when its context ends.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	go func() {
		select {
		case <-l.done:
			cancel(errEnded)
		case <-ctx.Done():
		}
	}()
	l.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// refused reports whether err is a connection refused: nothing listens.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "connection refused")
}
