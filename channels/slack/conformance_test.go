package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/slack"
	"github.com/textslash/textslash/channels/slack/slacktest"
	"github.com/textslash/textslash/channeltest"
)

// The Slack channel passes the conformance suite both ways Slack's events
// come in: over Socket Mode and as Events API requests.
func TestConformance(t *testing.T) {
	t.Run("SocketMode", func(t *testing.T) { channeltest.Run(t, conformance(true)) })
	t.Run("EventsAPI", func(t *testing.T) { channeltest.Run(t, conformance(false)) })
}

// slackFake is the suite's Slack: the fake, and the channel made on it
// last (its Events API routes served when not in Socket Mode).
type slackFake struct {
	t      *testing.T
	fake   *slacktest.Server
	socket bool
	made   int
	events atomic.Pointer[httptest.Server]
	n      atomic.Int64 // messages and presses written, for their ts
}

func conformance(socket bool) func(t *testing.T) channeltest.Provider {
	return func(t *testing.T) channeltest.Provider {
		f := &slackFake{t: t, fake: slacktest.New(t), socket: socket}
		return channeltest.Provider{
			Channel: f.channel, Person: "U0ALICE1", Stranger: "U0MALLORY", Direct: slacktest.DM, Shared: "C0SHARED1",
			Write: f.write, Press: f.press, Serve: f.serve, Spoof: f.spoof, Hold: f.hold, Sent: f.sent,
		}
	}
}

// channel makes the Slack channel on the fake, allowing U0ALICE1.
func (f *slackFake) channel() channel.Channel {
	cfg := slack.Config{BotToken: slacktest.BotToken, Allowed: []string{"U0ALICE1"}, APIURL: f.fake.APIURL()}
	if f.socket {
		cfg.AppToken = slacktest.AppToken
	} else {
		cfg.SigningSecret, cfg.PublicURL = secret, "https://textslash.example.com"
	}
	s, err := slack.New(cfg, zerolog.New(zerolog.NewTestWriter(f.t)))
	if err != nil {
		f.t.Fatal(err)
	}
	f.made++
	return s
}

// serve takes the Events API's routes: the fake's requests go there.
func (f *slackFake) serve(t *testing.T, routes http.Handler) {
	srv := httptest.NewServer(routes)
	t.Cleanup(srv.Close)
	f.events.Store(srv)
}

// ts is a new timestamp of a person's message or press.
func (f *slackFake) ts() string { return fmt.Sprintf("1712345678.%06d", f.n.Add(1)) }

// write delivers who's message: a direct message in their DM, a mention
// of the bot elsewhere. Slack delivers an event again (retry_attempt, or
// X-Slack-Retry-Num) when its acknowledgement did not come in time.
func (f *slackFake) write(t *testing.T, who, conversation, text string) func() {
	t.Helper()
	m := slacktest.Message{User: who, Channel: conversation, Text: text, TS: f.ts()}
	if conversation == slacktest.DM(who) {
		m.ChannelType = "im"
	} else {
		m.Mention, m.Text = true, "<@"+slacktest.BotUser+"> "+text
	}
	ev := m.Event("Ev" + m.TS)
	f.deliver(t, "events_api", ev, 0)
	return func() { f.deliver(t, "events_api", ev, 1) }
}

// deliver hands Slack's payload to the channel the way it runs: an
// envelope on its Socket Mode connection, acknowledged; or a signed
// request to its Events API route, answered 200 (Slack retries a 503).
func (f *slackFake) deliver(t *testing.T, kind string, payload []byte, retry int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if f.socket {
		if err := f.fake.Connections(ctx, f.made); err != nil {
			t.Fatal(err)
		}
		if err := f.fake.Deliver(ctx, kind, payload, retry); err != nil {
			t.Fatal(err)
		}
		return
	}
	body, contentType := payload, "application/json"
	if kind == "interactive" {
		body, contentType = []byte(url.Values{"payload": {string(payload)}}.Encode()), "application/x-www-form-urlencoded"
	}
	for try := retry; ; try++ {
		code := f.post(t, contentType, body, secret, try)
		if code == http.StatusOK {
			return
		}
		if code != http.StatusServiceUnavailable || ctx.Err() != nil {
			t.Fatalf("events request: %d; want 200", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// post posts body to the Events API route, signed with key, as Slack's
// retry number retry; its status.
func (f *slackFake) post(t *testing.T, contentType string, body []byte, key string, retry int) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.events.Load().URL+slack.EventsPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", fmt.Sprint(retry))
	}
	slacktest.Sign(req.Header, key, time.Now(), body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// press presses the button of choice under m, as its block_actions.
func (f *slackFake) press(t *testing.T, who string, m channeltest.Sent, choice string) {
	t.Helper()
	p := slacktest.Press{User: who, Channel: m.Conversation, MessageTS: m.ID, Text: m.Text,
		ActionID: "choice-" + choice, Value: choice, ActionTS: f.ts()}
	for _, s := range f.fake.Sent() {
		if s.TS == m.ID {
			p.Blocks = s.Blocks
		}
	}
	f.deliver(t, "interactive", p.Payload(), 0)
}

// spoof is the person's message signed with a secret other than the
// app's: refused (401). Socket Mode has no way in for one: events come
// over the websocket the channel opens to Slack with its app-level token.
func (f *slackFake) spoof(t *testing.T, text string) error {
	if f.socket {
		return fmt.Errorf("%w: in Socket Mode events come over the websocket the channel opens to Slack with its app-level token; nobody else can write to it", channeltest.ErrNotPossible)
	}
	ev := slacktest.Message{User: "U0ALICE1", Channel: slacktest.DM("U0ALICE1"), ChannelType: "im", Text: text, TS: f.ts()}.Event("Ev-spoof")
	if code := f.post(t, "application/json", ev, "not-the-signing-secret", 0); code != http.StatusUnauthorized {
		t.Errorf("a request not signed by Slack: %d; want 401", code)
	}
	return nil
}

// hold holds the answer to the first post of text (slacktest.Hold).
func (f *slackFake) hold(text string) {
	var once atomic.Bool
	f.fake.Hold(func(m slacktest.Sent) bool { return strings.Contains(m.Text, text) && once.CompareAndSwap(false, true) })
}

// sent is what the bot posted, as it stands, its buttons' values read
// from its blocks.
func (f *slackFake) sent() []channeltest.Sent {
	var out []channeltest.Sent
	for _, m := range f.fake.Sent() {
		out = append(out, channeltest.Sent{Conversation: m.Channel, ID: m.TS, Text: m.Text, Choices: buttonValues(m.Blocks), Edits: m.Updates})
	}
	return out
}

// buttonValues are the values of the buttons of Block Kit blocks.
func buttonValues(blocks json.RawMessage) []string {
	var bs []struct {
		Elements []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"elements"`
	}
	_ = json.Unmarshal(blocks, &bs)
	var out []string
	for _, b := range bs {
		for _, e := range b.Elements {
			if e.Type == "button" {
				out = append(out, e.Value)
			}
		}
	}
	return out
}
