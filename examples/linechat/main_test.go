package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channeltest"
	"github.com/textslash/textslash/natstest"
)

// linechat passes the conformance suite against a fake provider.
func TestConformance(t *testing.T) {
	t.Setenv("LINECHAT_ALLOWED", "alice")
	channeltest.Run(t, func(t *testing.T) channeltest.Provider {
		f := newFake(t)
		return channeltest.Provider{
			Channel: f.channel, Person: "alice", Stranger: "mallory",
			// Each person is one line: their own conversation.
			Direct: func(p string) string { return p },
			Write:  f.write, Press: f.press, Spoof: f.spoof, Hold: f.hold, Sent: f.sent,
			NoEdit: "linechat's provider has no edit: each progress line is a message of its own (spaced by Rules.ProgressEvery)",
		}
	})
}

// fake is linechat's provider: it takes sends (POST /send) and finds one
// again (GET /find); a send it holds is kept, its answer withheld until
// the channel hangs up. listen is where the channel made last takes
// people's lines.
type fake struct {
	*httptest.Server
	t       *testing.T
	mu      sync.Mutex
	took    []sentLine
	holding string // the text of the next send to hold
	listen  atomic.Value
	n       atomic.Int64
}

type sentLine struct {
	line
	At time.Time
}

func newFake(t *testing.T) *fake {
	f := &fake{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /send", f.take)
	mux.HandleFunc("GET /find", func(w http.ResponseWriter, r *http.Request) {
		since, _ := time.Parse(time.RFC3339Nano, r.FormValue("since"))
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, s := range f.took {
			if s.User == r.FormValue("user") && s.Text == r.FormValue("text") && !s.At.Before(since) {
				_ = json.NewEncoder(w).Encode(map[string]string{"id": s.ID})
				return
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]string{})
	})
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// take keeps a send and answers its id, unless it is the one to hold.
func (f *fake) take(w http.ResponseWriter, r *http.Request) {
	var s sentLine
	if err := json.NewDecoder(r.Body).Decode(&s.line); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	s.ID, s.At = fmt.Sprintf("L%d", len(f.took)+1), time.Now()
	f.took = append(f.took, s)
	held := f.holding != "" && strings.Contains(s.Text, f.holding)
	if held {
		f.holding = ""
	}
	f.mu.Unlock()
	if held {
		<-r.Context().Done() // the channel hung up
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]string{"id": s.ID})
}

// channel is linechat's provider type on the fake, taking lines on a
// port of its own.
func (f *fake) channel() channel.Channel {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f.listen.Store(addr)
	return &provider{base: f.URL, listen: addr, secret: lineSecret}
}

// write posts who's line to the channel, as the provider does: again
// when it had no answer (the same id), until the channel listens.
func (f *fake) write(t *testing.T, who, _, text string) func() {
	t.Helper()
	body, _ := json.Marshal(line{ID: fmt.Sprintf("m%d", f.n.Add(1)), User: who, Text: text})
	post := func() {
		natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
			resp, err := postLine(f.listen.Load().(string), body, lineSecret)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusForbidden {
				return errors.New(resp.Status)
			}
			return nil
		})
	}
	post()
	return post
}

// press: a press of one of linechat's buttons is the person's next line,
// the choice its text.
func (f *fake) press(t *testing.T, who string, _ channeltest.Sent, choice string) {
	f.write(t, who, who, choice)
}

// spoof posts alice's line without the provider's secret, as anyone who
// reaches LINECHAT_LISTEN could: refused (401).
func (f *fake) spoof(t *testing.T, text string) error {
	body, _ := json.Marshal(line{ID: fmt.Sprintf("m%d", f.n.Add(1)), User: "alice", Text: text})
	for _, secret := range []string{"", "not-the-secret"} {
		var code int
		natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error { // until the channel listens
			resp, err := postLine(f.listen.Load().(string), body, secret)
			if err != nil {
				return err
			}
			resp.Body.Close()
			code = resp.StatusCode
			return nil
		})
		if code != http.StatusUnauthorized {
			t.Errorf("a line signed with %q: %d; want 401", secret, code)
		}
	}
	return nil
}

// lineSecret is the secret the provider signs its posts with.
const lineSecret = "a secret the provider and the channel share"

// postLine posts a line to the channel at addr, signed with secret ("":
// not signed).
func postLine(addr string, body []byte, secret string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/message", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	return http.DefaultClient.Do(req)
}

func (f *fake) hold(text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holding = text
}

func (f *fake) sent() []channeltest.Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []channeltest.Sent
	for _, s := range f.took {
		out = append(out, channeltest.Sent{Conversation: s.User, ID: s.ID, Text: s.Text, Choices: s.Choices})
	}
	return out
}
