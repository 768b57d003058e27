package slack_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/slack"
	"github.com/textslash/textslash/channels/slack/slacktest"
	"github.com/textslash/textslash/contract"
)

const secret = "8f742231b10e8888abcd99yyyzzz85a5"

// eventsAPI serves the channel's Events API handler (no AppToken).
func eventsAPI(t *testing.T, fake *slacktest.Server) (*httptest.Server, *published) {
	t.Helper()
	log, ready := logs(t)
	s, err := slack.New(slack.Config{BotToken: slacktest.BotToken, SigningSecret: secret, PublicURL: "https://textslash.example.com",
		Allowed: []string{"U0ALICE1"}, APIURL: fake.APIURL()}, log)
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, s, ready)
	mux := http.NewServeMux()
	for route, h := range s.Routes(p) {
		mux.Handle(route, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, p
}

func post(t *testing.T, srv *httptest.Server, contentType string, body []byte, sign func(http.Header)) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+slack.EventsPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	sign(req.Header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestEventsAPI(t *testing.T) {
	fake := slacktest.New(t)
	srv, p := eventsAPI(t, fake)
	signed := func(body []byte) func(http.Header) {
		return func(h http.Header) { slacktest.Sign(h, secret, time.Now(), body) }
	}
	challenge := []byte(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	if code, body := post(t, srv, "application/json", challenge, signed(challenge)); code != 200 || body != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Errorf("url_verification: %d %q; want 200 and the challenge", code, body)
	}
	ev := slacktest.Message{User: "U0ALICE1", Channel: "D1", ChannelType: "im", Text: "hello", TS: "1712345678.000800"}.Event("Ev8")
	if code, _ := post(t, srv, "application/json", ev, signed(ev)); code != 200 {
		t.Fatalf("signed event: %d; want 200", code)
	}
	if got := p.all(); len(got) != 1 || got[0].Text != "hello" || got[0].User != (contract.User{Channel: "slack", ID: "U0ALICE1"}) {
		t.Fatalf("published %+v; want hello from U0ALICE1", got)
	}
	refused := map[string]func(http.Header){
		"wrong secret": func(h http.Header) { slacktest.Sign(h, "another-secret", time.Now(), ev) },
		"other body":   signed([]byte(`{"type":"event_callback"}`)),
		"ten min old":  func(h http.Header) { slacktest.Sign(h, secret, time.Now().Add(-10*time.Minute), ev) },
		"not signed":   func(http.Header) {},
	}
	for name, sign := range refused {
		if code, _ := post(t, srv, "application/json", ev, sign); code != http.StatusUnauthorized {
			t.Errorf("%s: %d; want 401", name, code)
		}
	}
	if got := p.all(); len(got) != 1 {
		t.Errorf("published %d messages; want only the signed one", len(got))
	}
	press := slacktest.Press{User: "U0ALICE1", Channel: "C7", MessageTS: "1712345678.000900", Text: "Run it?",
		ActionID: "choice-yes", Value: "yes", ActionTS: "1712345680.000001"}
	form := []byte(url.Values{"payload": {string(press.Payload())}}.Encode())
	if code, _ := post(t, srv, "application/x-www-form-urlencoded", form, signed(form)); code != 200 {
		t.Fatalf("signed press: %d; want 200", code)
	}
	if got := p.all(); len(got) != 2 || got[1].Text != "yes" || got[1].User != alice || got[1].ID != "C7-act-1712345680_000001" {
		t.Errorf("published %+v; want yes from U0ALICE1 in C7", got)
	}
}

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  slack.Config
		want []string // settings refused
	}{
		{"socket mode", slack.Config{BotToken: "xoxb-1", AppToken: "xapp-1", Allowed: []string{"U0ALICE1"}}, nil},
		{"events api", slack.Config{BotToken: "xoxb-1", SigningSecret: "s", PublicURL: "https://h.example", Allowed: []string{"W0BOB"}}, nil},
		{"nothing", slack.Config{}, []string{"BotToken", "AppToken", "Allowed"}},
		{"user token", slack.Config{BotToken: "xoxp-1", AppToken: "xoxb-2", Allowed: []string{"alice"}}, []string{"BotToken", "AppToken", "Allowed"}},
		{"events api without a URL", slack.Config{BotToken: "xoxb-1", SigningSecret: "s", Allowed: []string{"U0ALICE1"}}, []string{"PublicURL"}},
	} {
		_, err := slack.New(tc.cfg, zerolog.Nop())
		var got []string
		for _, e := range unjoin(err) {
			var ce *contract.ConfigError
			if !errors.As(e, &ce) {
				t.Errorf("%s: %v is no ConfigError", tc.name, e)
				continue
			}
			got = append(got, ce.Setting)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: refused %v (%v); want %v", tc.name, got, err, tc.want)
		}
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
