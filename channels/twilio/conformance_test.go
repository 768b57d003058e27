package twilio_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/twilio"
	"github.com/textslash/textslash/channeltest"
	"github.com/textslash/textslash/twiliotest"
)

// WhatsApp through Twilio passes the conformance suite, its messages and
// quick-reply presses posted to its webhook, signed as Twilio signs them.
// A person is a number: WhatsApp has no conversation of theirs but their
// chat with the number; Twilio edits no message.
func TestConformance(t *testing.T) {
	t.Run("kit", func(t *testing.T) { channeltest.Run(t, twilioProvider) })
	t.Run("ingress and egress", func(t *testing.T) { channeltest.RunBuiltIn(t, twilioProvider) })
}

// twilioProvider is the suite's fake, for one case.
func twilioProvider(t *testing.T) channeltest.Provider {
	f := &twilioFake{t: t, api: twiliotest.NewAPI(t, twiliotest.WithoutCallbacks())}
	return channeltest.Provider{
		Channel: f.channel, Person: "15551230001", Stranger: "15559990000",
		Direct: func(p string) string { return "whatsapp:+" + p },
		Write:  f.write, Press: f.press, Serve: f.serve, Spoof: f.spoof, Hold: f.api.Hold, Sent: f.sent,
		NoEdit: "Twilio edits no message: each progress line is a message of its own (spaced by Rules.ProgressEvery)",
	}
}

// publicURL is where the test's Twilio believes it calls textslash: what
// it signs.
const publicURL = "https://textslash.example.com"

// twilioFake is the suite's Twilio: the fake API, and the webhook of the
// channel made last.
type twilioFake struct {
	t       *testing.T
	api     *twiliotest.API
	webhook atomic.Pointer[httptest.Server]
	n       atomic.Int64
}

// channel makes WhatsApp on the fake, allowing +15551230001.
func (f *twilioFake) channel() channel.Channel {
	tw, err := twilio.New(twilio.Config{AccountSID: f.api.AccountSID, AuthToken: f.api.AuthToken, APIURL: f.api.URL,
		From: from, PublicURL: publicURL, Allowed: []string{"+15551230001"}}, nil, zerolog.New(zerolog.NewTestWriter(f.t)))
	if err != nil {
		f.t.Fatal(err)
	}
	return tw.Channels()[0]
}

// serve takes Twilio's webhook routes: the fake's posts go there.
func (f *twilioFake) serve(t *testing.T, routes http.Handler) {
	srv := httptest.NewServer(routes)
	t.Cleanup(srv.Close)
	f.webhook.Store(srv)
}

// write posts who's WhatsApp message, signed; again posts it once more
// (same MessageSid), as Twilio does when its webhook's answer was lost.
func (f *twilioFake) write(t *testing.T, who, _, text string) func() {
	t.Helper()
	form := twiliotest.InboundParams("whatsapp:+"+who, "whatsapp:"+from, text, fmt.Sprintf("SM%032d", f.n.Add(1)))
	f.deliver(t, form)
	return func() { f.deliver(t, form) }
}

// press posts the press of choice on m's quick reply: a message whose
// ButtonPayload is the choice.
func (f *twilioFake) press(t *testing.T, who string, m channeltest.Sent, choice string) {
	t.Helper()
	form := twiliotest.InboundParams("whatsapp:+"+who, "whatsapp:"+from, strings.ToUpper(choice[:1])+choice[1:], fmt.Sprintf("SM%032d", f.n.Add(1)))
	form.Set("ButtonPayload", choice)
	form.Set("ButtonText", strings.ToUpper(choice[:1])+choice[1:])
	f.deliver(t, form)
}

// deliver posts form to the webhook, signed, until it is answered 200.
func (f *twilioFake) deliver(t *testing.T, form url.Values) {
	t.Helper()
	if code := f.post(t, form, twiliotest.Sign(f.api.AuthToken, publicURL+"/webhook", form)); code != http.StatusOK {
		t.Fatalf("webhook: %d; want 200", code)
	}
}

// post posts form to the webhook with the signature given; its status.
func (f *twilioFake) post(t *testing.T, form url.Values, sig string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.webhook.Load().URL+"/webhook", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sig != "" {
		req.Header.Set("X-Twilio-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// spoof posts the person's message signed with another token, and
// unsigned: refused (403) both times.
func (f *twilioFake) spoof(t *testing.T, text string) error {
	form := twiliotest.InboundParams("whatsapp:+15551230001", "whatsapp:"+from, text, fmt.Sprintf("SM%032d", f.n.Add(1)))
	for _, sig := range []string{twiliotest.Sign("0123456789abcdef0123456789abcdef", publicURL+"/webhook", form), ""} {
		if code := f.post(t, form, sig); code != http.StatusForbidden {
			t.Errorf("a message signed %q: %d; want 403", sig, code)
		}
	}
	return nil
}

// sent is what the fake took, its quick replies' choices read from their
// content.
func (f *twilioFake) sent() []channeltest.Sent {
	var out []channeltest.Sent
	for _, m := range f.api.Messages() {
		s := channeltest.Sent{Conversation: m.To, ID: m.SID, Text: m.Body}
		if q := f.api.QuickReplyOf(m); q != nil {
			for _, a := range q.Actions {
				s.Choices = append(s.Choices, a.ID)
			}
		}
		out = append(out, s)
	}
	return out
}
