package webchat_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/webchat"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

var signer, _ = contract.NewMediaSigner([]byte("webchat test key 0123"), contract.MediaTTL)

// chat is a web chat on a real embedded JetStream, its pages served with
// a Host that keeps what they publish.
type chat struct {
	ns       *natstest.Server
	sessions contract.WebSessions
	pages    http.Handler
	wc       *webchat.WebChat
	mu       sync.Mutex
	took     []contract.Inbound
}

func start(t *testing.T) *chat {
	t.Helper()
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	sessions, err := contract.NewWebSessions([]byte("web session key 0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	wc, err := webchat.New(webchat.Config{Sessions: sessions, Signer: signer}, ns.JS, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	c := &chat{ns: ns, sessions: sessions, wc: wc}
	mux := http.NewServeMux()
	for route, h := range wc.Pages(c) {
		mux.Handle(route, h)
	}
	c.pages = mux
	return c
}

// Publish keeps in.
func (c *chat) Publish(_ context.Context, in contract.Inbound) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.took = append(c.took, in)
	return nil
}

// events publishes the events events makes for a new session's person,
// and returns the data of the first n events that session's event stream
// sends.
func (c *chat) events(t *testing.T, n int, events func(u contract.User) []contract.Event) [][]byte {
	t.Helper()
	cookie, u := c.sessions.New()
	srv := httptest.NewServer(c.pages)
	defer srv.Close()
	for i, ev := range events(u) {
		if err := bus.PublishEvent(t.Context(), c.ns.JS, ev, fmt.Sprintf("test-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/events", nil)
	req.AddCookie(&http.Cookie{Name: contract.WebSessionCookie, Value: cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var out [][]byte
	for len(out) < n && sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, []byte(data))
		}
	}
	if len(out) < n {
		t.Fatalf("%d events; want %d: %v", len(out), n, sc.Err())
	}
	return out
}

// cut splits "METHOD /path".
func cut(route string) (method, path string, ok bool) { return strings.Cut(route, " ") }
