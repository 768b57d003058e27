package netns

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/rs/zerolog"
)

// proxy is an HTTP forward proxy on the host's loopback whose every
// connection is made inside the namespace.
type proxy struct {
	ln        net.Listener
	srv       *http.Server
	transport *http.Transport
}

// ProxyURL returns the address of an HTTP forward proxy on the host's
// loopback ("http://127.0.0.1:PORT"), started on first use, whose every
// connection is made with Dial: a browser on the host given it reaches into
// this namespace and no other ("http://localhost:3000" is the person's dev
// server). It takes CONNECT (so HTTPS and WebSockets tunnel through it) and
// requests with absolute URIs (WebSocket upgrades included).
func (n *Net) ProxyURL() (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return "", ErrClosed
	}
	if n.proxy == nil {
		p, err := n.startProxy()
		if err != nil {
			return "", err
		}
		n.proxy = p
	}
	return "http://" + n.proxy.ln.Addr().String(), nil
}

// startProxy listens and serves; n.mu is held.
func (n *Net) startProxy() (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy into namespace: %w", err)
	}
	log := n.log.With().Str("proxy", ln.Addr().String()).Logger()
	p := &proxy{ln: ln, transport: &http.Transport{
		DialContext:         n.Dial,
		Proxy:               nil,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}}
	rp := &httputil.ReverseProxy{
		// The request's URL is absolute already: it goes where it says.
		Rewrite:   func(*httputil.ProxyRequest) {},
		Transport: p.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			log.Warn().Err(err).Str("url", r.URL.Redacted()).Msg("netns: proxied request failed")
			// No answer at all, as the server itself would give: a 502
			// page would load, and a screenshot of it pass for the app's.
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			http.Error(w, "netns proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Method == http.MethodConnect:
				n.connect(w, r, log)
			case r.URL.IsAbs():
				rp.ServeHTTP(w, r)
			default:
				http.Error(w, "netns proxy: only CONNECT and absolute URIs", http.StatusBadRequest)
			}
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zerologStd(log),
	}
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		err := p.srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("netns: proxy stopped")
		}
	}()
	log.Info().Msg("netns: proxy into namespace started")
	return p, nil
}

// connect tunnels a CONNECT request to its target, dialled inside the
// namespace.
func (n *Net) connect(w http.ResponseWriter, r *http.Request, log zerolog.Logger) {
	up, err := n.Dial(r.Context(), "tcp", r.Host)
	if err != nil {
		log.Warn().Err(err).Str("target", r.Host).Msg("netns: CONNECT could not reach its target")
		http.Error(w, "netns proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "netns proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	c, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		log.Warn().Err(err).Msg("netns: CONNECT hijack failed")
		return
	}
	_, err = c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	if err == nil && buf.Reader.Buffered() > 0 {
		// Bytes the client sent after its request, before our answer.
		early, _ := buf.Reader.Peek(buf.Reader.Buffered())
		_, err = up.Write(early)
	}
	if err != nil {
		c.Close()
		up.Close()
		return
	}
	n.conns.pipe(c, up)
}

func (p *proxy) close() error {
	err := p.srv.Close()
	p.transport.CloseIdleConnections()
	return err
}
