package preview

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultTTL is how long a link lasts when Config.TTL is zero.
const DefaultTTL = time.Hour

// forget is how long an expired or revoked link is remembered, to say so
// rather than "unknown".
const forget = 24 * time.Hour

// Target is what a link opens: a port in a person's home.
type Target struct {
	Person string // the person's key
	Home   string // the home's id
	Port   int
	// Dial connects inside the home's network (netns.Net.Dial).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Touch, when set, is called at each request: the home is in use.
	Touch func()
}

// Link is a preview link handed out.
type Link struct {
	ID      string
	URL     string
	Port    int
	Opened  time.Time
	Expires time.Time
}

// link is a Link and what the proxy needs of it.
type link struct {
	Link
	target  Target
	ended   string // why it no longer opens ("" while it does)
	endedAt time.Time
	proxy   *appProxy
	// done is closed when the link ends (its TTL, or stop), and with it
	// ends every request and upgraded connection it serves.
	done chan struct{}
	stop func() // closes done, once
}

// Why a link no longer opens.
const (
	endOff  = "it was turned off (preview off)"
	endHome = "the workspace it showed was shut down (idle too long)"
	endTTL  = "it expired"
)

// links are the links handed out, by id.
type links struct {
	pattern *url.URL // the URL with "*" in its host, where ids go
	ttl     time.Duration
	now     func() time.Time

	mu sync.Mutex
	m  map[string]*link
}

// newLinks checks pattern: a URL whose host's first label is "*".
func newLinks(pattern string, ttl time.Duration) (*links, error) {
	u, err := ParseURL(pattern)
	if err != nil {
		return nil, err
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &links{pattern: u, ttl: ttl, now: time.Now, m: map[string]*link{}}, nil
}

// newID is an unguessable id (128 bits), a DNS label.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// url is link id's URL.
func (ls *links) url(id string) string {
	u := *ls.pattern
	u.Host = strings.Replace(u.Host, "*", id, 1)
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String()
}

// idOf is the link id a request's host names, "" when it names none.
func (ls *links) idOf(host string) string {
	h := hostname(host)
	suffix := hostname(strings.TrimPrefix(ls.pattern.Host, "*"))
	id, ok := strings.CutSuffix(strings.ToLower(h), strings.ToLower(suffix))
	if !ok || id == "" || strings.Contains(id, ".") {
		return ""
	}
	return id
}

// hostname is host without its port.
func hostname(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// open hands out a link to t.
func (ls *links) open(t Target) (Link, error) {
	if t.Port < 1 || t.Port > 65535 {
		return Link{}, fmt.Errorf("%d: %w", t.Port, ErrBadPort)
	}
	id := newID()
	l := &link{Link: Link{ID: id, URL: ls.url(id), Port: t.Port, Opened: ls.now().UTC(), Expires: ls.now().Add(ls.ttl).UTC()}, target: t}
	l.proxy = newAppProxy(l, ls.url(id))
	l.done = make(chan struct{})
	l.stop = sync.OnceFunc(func() { close(l.done) })
	time.AfterFunc(ls.ttl, l.stop)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.sweepLocked()
	ls.m[id] = l
	return l.Link, nil
}

// find is the link of id, and why it does not open ("" when it does).
func (ls *links) find(id string) (*link, string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.m[id]
	if l == nil {
		return nil, ""
	}
	if l.ended == "" && !ls.now().Before(l.Expires) {
		l.ended, l.endedAt = endTTL, l.Expires
	}
	return l, l.ended
}

// end ends the open links match picks, saying why; it returns how many.
func (ls *links) end(why string, match func(*link) bool) int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	n := 0
	for _, l := range ls.m {
		if l.ended == "" && ls.now().Before(l.Expires) && match(l) {
			l.ended, l.endedAt = why, ls.now()
			l.stop()
			n++
		}
	}
	return n
}

// list is the person's open links, the newest first.
func (ls *links) list(person string) []Link {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var out []Link
	for _, l := range ls.m {
		if l.target.Person == person && l.ended == "" && ls.now().Before(l.Expires) {
			out = append(out, l.Link)
		}
	}
	slices.SortFunc(out, func(a, b Link) int { return b.Expires.Compare(a.Expires) })
	return out
}

// sweepLocked forgets links ended longer than forget ago. ls.mu is held.
func (ls *links) sweepLocked() {
	for id, l := range ls.m {
		end := l.endedAt
		if l.ended == "" {
			end = l.Expires
		}
		if ls.now().Sub(end) > forget {
			l.stop()
			delete(ls.m, id)
		}
	}
}
