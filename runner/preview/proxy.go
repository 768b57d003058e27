package preview

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// appProxy passes a link's requests to its app.
type appProxy struct {
	rp     *httputil.ReverseProxy
	app    string // localhost:<port>: the Host the app sees
	origin string // the link's origin
	port   int
}

// newAppProxy is the proxy of link l, whose URL is linkURL.
func newAppProxy(l *link, linkURL string) *appProxy {
	u, _ := url.Parse(linkURL)
	p := &appProxy{app: "localhost:" + strconv.Itoa(l.Port), origin: u.Scheme + "://" + u.Host, port: l.Port}
	dial := l.target.Dial
	port := strconv.Itoa(l.Port)
	transport := &http.Transport{
		// Into the home: its loopback, IPv4 first (a dev server listening
		// on "localhost" may have taken either).
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			c, err := dial(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
			if err != nil && refused(err) {
				if c6, err6 := dial(ctx, "tcp", net.JoinHostPort("::1", port)); err6 == nil {
					return c6, nil
				}
			}
			return c, err
		},
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 2 * time.Minute,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      transport,
		FlushInterval:  -1, // streaming responses and server-sent events as they come
		ModifyResponse: p.response,
		ErrorHandler:   p.failed,
	}
	return p
}

func (p *appProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.rp.ServeHTTP(w, r) }

// rewrite makes the request the app sees: for localhost:<port> (the Host
// dev servers accept), without textslash's cookies and headers, with its
// own origin where the browser named the link's.
func (p *appProxy) rewrite(pr *httputil.ProxyRequest) {
	out := pr.Out
	out.URL.Scheme, out.URL.Host, out.Host = "http", p.app, p.app
	stripTextslash(out.Header)
	for _, h := range []string{"Origin", "Referer"} {
		if v := out.Header.Get(h); v == p.origin || strings.HasPrefix(v, p.origin+"/") {
			out.Header.Set(h, "http://"+p.app+strings.TrimPrefix(v, p.origin))
		}
	}
}

// stripTextslash removes textslash's cookies (ts_…) and headers
// (Textslash-…) from h.
func stripTextslash(h http.Header) {
	for name := range h {
		if strings.HasPrefix(strings.ToLower(name), "textslash-") || strings.HasPrefix(strings.ToLower(name), "x-textslash-") {
			h.Del(name)
		}
	}
	cookies := h.Values("Cookie")
	if len(cookies) == 0 {
		return
	}
	var keep []string
	for _, line := range cookies {
		for part := range strings.SplitSeq(line, ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), "=")
			if name != "" && !textslashCookie(name) {
				keep = append(keep, strings.TrimSpace(part))
			}
		}
	}
	h.Del("Cookie")
	if len(keep) > 0 {
		h.Set("Cookie", strings.Join(keep, "; "))
	}
}

// textslashCookie reports whether a cookie is one of textslash's: ts_…,
// also behind a __Host- or __Secure- prefix.
func textslashCookie(name string) bool {
	name = strings.ToLower(name)
	for _, prefix := range []string{"__host-", "__secure-"} {
		name = strings.TrimPrefix(name, prefix)
	}
	return strings.HasPrefix(name, "ts_")
}

// hostOnly is a Set-Cookie line without its Domain attributes: the
// cookie is then the link's alone, where one for a parent domain would
// be sent to every other link under it, and to the chat when the links
// share its name.
func hostOnly(line string) string {
	parts := strings.Split(line, ";")
	keep := parts[:1]
	for _, attr := range parts[1:] {
		name, _, _ := strings.Cut(attr, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "domain") {
			keep = append(keep, attr)
		}
	}
	return strings.Join(keep, ";")
}

// response rewrites what the app answers: a redirect to its own
// localhost address comes back to the link, and the link (a bearer
// token in its host) is never sent on as a referrer, and its cookies are
// the link's alone (hostOnly).
func (p *appProxy) response(resp *http.Response) error {
	if cookies := resp.Header.Values("Set-Cookie"); len(cookies) > 0 {
		resp.Header.Del("Set-Cookie")
		for _, c := range cookies {
			resp.Header.Add("Set-Cookie", hostOnly(c))
		}
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		for _, own := range []string{"http://" + p.app, "http://127.0.0.1:" + strconv.Itoa(p.port)} {
			if loc == own || strings.HasPrefix(loc, own+"/") {
				resp.Header.Set("Location", p.origin+strings.TrimPrefix(loc, own))
			}
		}
	}
	resp.Header.Set("Referrer-Policy", "no-referrer")
	return nil
}

// failed answers a request the app could not be reached for.
func (p *appProxy) failed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case refused(err):
		page(w, http.StatusBadGateway, "Nothing listens on port "+strconv.Itoa(p.port),
			fmt.Sprintf("Nothing listens on port %d in your workspace. Start your app's server there (textslash background <command>), then reload.", p.port))
	case errors.Is(context.Cause(r.Context()), errEnded):
		page(w, http.StatusGone, "Preview link ended", "This preview link ended while the app was answering.")
	case errors.Is(err, context.Canceled):
		// The browser went away.
	default:
		page(w, http.StatusBadGateway, "The app did not answer", fmt.Sprintf("The app on port %d did not answer.", p.port))
	}
}

// page answers with a short HTML page of textslash's own.
func page(w http.ResponseWriter, code int, title, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(code)
	fmt.Fprintf(w, `<!doctype html><meta name="viewport" content="width=device-width"><title>%s</title>
<body style="font-family:sans-serif;margin:2em"><h1 style="font-size:1.3em">%s</h1><p id="why">%s</p>`,
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}
