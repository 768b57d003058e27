package ingress_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/telegram"
	"github.com/textslash/textslash/channels/twilio"
	"github.com/textslash/textslash/channels/webchat"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/telegramtest"
	"github.com/textslash/textslash/twiliotest"
)

var traceIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Each webhook gives its message a trace id, publishes it as the
// Textslash-Trace header on ts.in and logs it; a caller's W3C traceparent
// gives its trace-id. The media fetch service logs the trace the runner
// asks with.
func TestInboundTrace(t *testing.T) {
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	api := twiliotest.NewAPI(t)
	var logs natstest.Logs
	sessions, err := contract.NewWebSessions([]byte("a web session key for tests"))
	if err != nil {
		t.Fatal(err)
	}
	chat, err := webchat.New(webchat.Config{Sessions: sessions}, ns.JS, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	in, err := ingress.New(ingress.Config{
		Channels: append(twilioChannels(t, ns.JS, twilio.Config{AuthToken: api.AuthToken, AccountSID: api.AccountSID, APIURL: api.URL,
			PublicURL: publicURL, Allowed: []string{alice}}),
			telegramChannel(t, ns.JS, telegram.Config{BotToken: telegramtest.Token, Secret: tgSecret, Allowed: []string{"4242"}}), chat),
	}, ns.JS, zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	hooks := httptest.NewServer(in.Handler())
	t.Cleanup(hooks.Close)
	web := httptest.NewServer(in.Pages())
	t.Cleanup(web.Close)
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	page, err := browser.Get(web.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	session, _, _ := strings.Cut(page.Cookies()[0].Value, ".") // the user id, before the signature

	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tt := range []struct {
		name        string
		req         *http.Request
		client      *http.Client
		user, id    string
		traceparent string
	}{
		{name: "twilio", req: func() *http.Request {
			form := inboundForm("whatsapp:"+alice, "echo hi", sid1)
			r, _ := http.NewRequest(http.MethodPost, hooks.URL+"/webhook", strings.NewReader(form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("X-Twilio-Signature", twiliotest.Sign(api.AuthToken, publicURL+"/webhook", form))
			return r
		}(), client: http.DefaultClient, user: "whatsapp.15551230001", id: sid1},
		{name: "telegram", req: func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, hooks.URL+telegram.WebhookPath, bytes.NewReader(telegramtest.Update(7, 4242, "echo hi", "")))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("X-Telegram-Bot-Api-Secret-Token", tgSecret)
			return r
		}(), client: http.DefaultClient, user: "telegram.4242", id: "tg7"},
		{name: "web chat, with a traceparent", req: func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, web.URL+"/api/messages", strings.NewReader(`{"id":"w1","text":"echo hi"}`))
			r.Header.Set("Content-Type", "application/json")
			return r
		}(), client: browser, user: "web." + session, id: "w1", traceparent: "00-" + callerTrace + "-00f067aa0ba902b7-01"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.traceparent != "" {
				tt.req.Header.Set("traceparent", tt.traceparent)
			}
			resp, err := tt.client.Do(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode >= 300 {
				t.Fatalf("status %s", resp.Status)
			}
			s, err := ns.JS.Stream(t.Context(), contract.StreamIn)
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.GetLastMsgForSubject(t.Context(), "ts.in."+tt.user)
			if err != nil {
				t.Fatalf("nothing stored for %s: %v", tt.user, err)
			}
			trace := bus.Trace(m.Header)
			if !traceIDRE.MatchString(trace) {
				t.Fatalf("stored message's %s header %q; want 32 hex digits", contract.HeaderTrace, trace)
			}
			if tt.traceparent != "" && trace != callerTrace {
				t.Errorf("trace %s; want the traceparent's %s", trace, callerTrace)
			}
			if lines := logs.Find(t, "inbound", map[string]string{"job_id": tt.id, contract.LogTrace: trace}); len(lines) != 1 {
				t.Errorf("%d inbound lines for %s with trace %s; want 1", len(lines), tt.id, trace)
			}
		})
	}

	t.Run("media fetch", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- in.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		var img bytes.Buffer
		if err := png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 2, 2))); err != nil {
			t.Fatal(err)
		}
		u := contract.User{Channel: contract.ChannelWhatsApp, ID: "15551230001"}
		data, _ := contract.Encode(&contract.MediaFetch{User: u, Media: contract.Media{URL: api.AddMedia("image/png", img.Bytes()), ContentType: "image/png"}})
		trace := contract.NewTrace("")
		req := nats.NewMsg(contract.MediaFetchSubject(u.Channel))
		req.Data = data
		req.Header.Set(contract.HeaderTrace, trace)
		natstest.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
			_, err := ns.NC.RequestMsg(req, 5*time.Second)
			return err
		})
		if lines := logs.Find(t, "attachment fetched", map[string]string{contract.LogTrace: trace}); len(lines) != 1 {
			t.Errorf("%d lines 'attachment fetched' with trace %s; want 1", len(lines), trace)
		}
	})
}
