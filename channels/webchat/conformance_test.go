package webchat_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/webchat"
	"github.com/textslash/textslash/channeltest"
	"github.com/textslash/textslash/contract"
)

// The web chat runs the conformance suite with a browser as its
// "provider": the person is a session the chat issued, a stranger one it
// did not (a cookie no key signed), what the bot sent is what the
// person's event stream brings.
func TestConformance(t *testing.T) {
	t.Run("kit", func(t *testing.T) { channeltest.Run(t, webchatProvider) })
	t.Run("ingress and egress", func(t *testing.T) { channeltest.RunBuiltIn(t, webchatProvider) })
}

// webchatProvider is the suite's fake, for one case.
func webchatProvider(t *testing.T) channeltest.Provider {
	b := newBrowser(t)
	return channeltest.Provider{
		JetStream: func(js jetstream.JetStream) { b.js = js },
		Channel:   b.channel,
		Person:    b.person.ID, Stranger: "0badc0ffee",
		Direct: func(p string) string { return "browser of " + p },
		Write:  b.write, Press: b.press, Serve: b.serve, Spoof: b.spoof, Sent: b.sent,
		NoEdit: "the page lists a job's progress lines as steps, each as its event comes",
	}
}

// browser is the person's browser: their session, and what their event
// stream brought.
type browser struct {
	t        *testing.T
	js       jetstream.JetStream
	sessions contract.WebSessions
	cookie   string
	person   contract.User
	srv      *httptest.Server
	n        atomic.Int64
	mu       sync.Mutex
	events   map[uint64]contract.Event // by stream sequence
	order    []uint64
}

func newBrowser(t *testing.T) *browser {
	sessions, err := contract.NewWebSessions([]byte("web session key 0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, sessions: sessions, events: map[uint64]contract.Event{}}
	b.cookie, b.person = sessions.New()
	return b
}

func (b *browser) channel() channel.Channel {
	wc, err := webchat.New(webchat.Config{Sessions: b.sessions, Signer: signer}, b.js, zerolog.New(zerolog.NewTestWriter(b.t)))
	if err != nil {
		b.t.Fatal(err)
	}
	return wc
}

// serve serves the chat's pages, and opens the person's event stream on
// them, as the page does.
func (b *browser) serve(t *testing.T, pages http.Handler) {
	if b.srv != nil {
		b.srv.Close()
	}
	b.srv = httptest.NewServer(pages)
	t.Cleanup(b.srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/api/events", nil)
	req.AddCookie(&http.Cookie{Name: contract.WebSessionCookie, Value: b.cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/events: %s", resp.Status)
	}
	go b.read(resp)
}

// read keeps the stream's events until it ends.
func (b *browser) read(resp *http.Response) {
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var seq uint64
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			seq, _ = strconv.ParseUint(id, 10, 64)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev contract.Event
			if json.Unmarshal([]byte(data), &ev) == nil {
				b.mu.Lock()
				if _, seen := b.events[seq]; !seen {
					b.order = append(b.order, seq)
				}
				b.events[seq] = ev
				b.mu.Unlock()
			}
		}
	}
}

// write posts text as who: the person with their session, a stranger
// with a cookie the chat never issued (refused, 401). again posts the
// same message id once more, as a page retrying a POST whose answer was
// lost.
func (b *browser) write(t *testing.T, who, _, text string) func() {
	t.Helper()
	cookie := b.cookie
	if who != b.person.ID {
		cookie = who + ".forged"
	}
	body, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("m%d", b.n.Add(1)), "text": text})
	post := func() {
		code := b.post(t, cookie, body)
		if want := map[bool]int{true: http.StatusAccepted, false: http.StatusUnauthorized}[who == b.person.ID]; code != want {
			t.Errorf("%s's message: %d; want %d", who, code, want)
		}
	}
	post()
	return post
}

// press: the page sends a button's choice as the person's next message.
func (b *browser) press(t *testing.T, who string, _ channeltest.Sent, choice string) {
	b.write(t, who, "", choice)
}

// spoof posts as the person without their session: with no cookie, and
// with their id under a signature the chat did not make. Both are 401.
func (b *browser) spoof(t *testing.T, text string) error {
	body, _ := json.Marshal(map[string]string{"text": text})
	for _, cookie := range []string{"", b.person.ID + ".forged", b.person.ID} {
		if code := b.post(t, cookie, body); code != http.StatusUnauthorized {
			t.Errorf("a message with the cookie %q: %d; want 401", cookie, code)
		}
	}
	return nil
}

func (b *browser) post(t *testing.T, cookie string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/api/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: contract.WebSessionCookie, Value: cookie})
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// sent is what the person's stream brought that the page shows as the
// bot's messages.
func (b *browser) sent() []channeltest.Sent {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []channeltest.Sent
	for _, seq := range b.order {
		ev := b.events[seq]
		if ev.Text == "" {
			continue // started, delivery and the like: no message
		}
		out = append(out, channeltest.Sent{Conversation: "browser of " + b.person.ID, ID: fmt.Sprint(seq), Text: ev.Text, Choices: ev.Choices})
	}
	return out
}
