package ingress_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/telegramtest"
)

const tgSecret = "telegram-secret-0123456789"

func startTelegram(t testing.TB, api *telegramtest.API) (*twilioHarness, func(t testing.TB, secret string, body []byte) int) {
	t.Helper()
	ns := natstest.RunJetStream(t)
	if err := contract.Provision(t.Context(), ns.JS, contract.Options{}); err != nil {
		t.Fatal(err)
	}
	in, err := ingress.New(ingress.Config{Telegram: &ingress.Telegram{
		BotToken: telegramtest.Token, Secret: tgSecret, Allowed: []string{"4242", "-100777"}, APIURL: api.URL,
	}}, ns.JS, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(in.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	post := func(t testing.TB, secret string, body []byte) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+ingress.TelegramPath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	return &twilioHarness{t: t, js: ns.JS, srv: srv, in: in}, post
}

// Updates with the webhook secret from allowed chats are published once
// each (update_id deduplicates Telegram's retries); forged ones are
// refused, others ignored; photos become media the fetch service
// downloads with getFile.
func TestTelegramWebhook(t *testing.T) {
	api := telegramtest.NewAPI(t)
	h, post := startTelegram(t, api)

	for _, tc := range []struct {
		name   string
		secret string
		body   []byte
		want   int
	}{
		{"text", tgSecret, telegramtest.Update(1, 4242, "echo hi", ""), 200},
		{"retry of the same update", tgSecret, telegramtest.Update(1, 4242, "echo hi", ""), 200},
		{"no secret", "", telegramtest.Update(2, 4242, "forged", ""), 403},
		{"wrong secret", "telegram-secret-0123456780", telegramtest.Update(3, 4242, "forged", ""), 403},
		{"chat not allowed", tgSecret, telegramtest.Update(4, 999, "hello?", ""), 200},
		{"malformed", tgSecret, []byte(`{"update_id": "x"`), 400},
		{"not a message", tgSecret, []byte(`{"update_id": 5, "edited_message": {"message_id": 1, "date": 1, "chat": {"id": 4242, "type": "private"}, "text": "x"}}`), 200},
		{"photo with caption", tgSecret, telegramtest.Update(6, 4242, "what is this?", "FILE1"), 200},
		{"group chat", tgSecret, telegramtest.Update(7, -100777, "in the group", ""), 200},
		{"too large", tgSecret, bytes.Repeat([]byte(" "), 70<<10), 413},
	} {
		if got := post(t, tc.secret, tc.body); got != tc.want {
			t.Errorf("%s: status %d; want %d", tc.name, got, tc.want)
		}
	}
	got := h.inbound()
	if len(got) != 3 {
		t.Fatalf("%d inbound messages; want 3: %+v", len(got), got)
	}
	want := []struct{ id, user, text string }{{"tg1", "telegram.4242", "echo hi"}, {"tg6", "telegram.4242", "what is this?"}, {"tg7", "telegram.-100777", "in the group"}}
	for i, w := range want {
		if got[i].ID != w.id || got[i].User.Key() != w.user || got[i].Text != w.text {
			t.Errorf("inbound %d: %+v; want %+v", i, got[i], w)
		}
	}
	if m := got[1].Media; len(m) != 1 || m[0].URL != "telegram:FILE1" || m[0].ContentType != "image/jpeg" {
		t.Fatalf("photo media %+v; want the largest size, telegram:FILE1", m)
	}

	// The runner asks for the photo; ingress fetches it from Telegram.
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 8, 8))); err != nil {
		t.Fatal(err)
	}
	api.AddFile("FILE1", buf.Bytes())
	ask := func(u contract.User, mediaURL string) (contract.Image, string) {
		data, _ := contract.Encode(&contract.MediaFetch{User: u, Media: contract.Media{URL: mediaURL, ContentType: "image/jpeg"}})
		var code string
		var img contract.Image
		natstest.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
			resp, err := h.js.Conn().Request(contract.SubjectMediaFetch, data, 5*time.Second)
			if err != nil {
				return err
			}
			if code = resp.Header.Get(micro.ErrorCodeHeader); code != "" {
				return nil
			}
			return json.Unmarshal(resp.Data, &img)
		})
		return img, code
	}
	img, code := ask(got[1].User, "telegram:FILE1")
	if code != "" || img.ContentType != "image/png" || img.Size != buf.Len() {
		t.Errorf("fetch: %+v, error %q; want the png", img, code)
	}
	if _, code := ask(got[1].User, "telegram:NOSUCH"); code != "502" {
		t.Errorf("unknown file: error %q; want 502", code)
	}
	if _, code := ask(contract.User{Channel: contract.ChannelWhatsApp, ID: "15551230001"}, "telegram:FILE1"); code != "403" {
		t.Errorf("a Telegram file for a WhatsApp user: error %q; want 403", code)
	}
}

func TestTelegramConfig(t *testing.T) {
	ns := natstest.RunJetStream(t)
	for _, tc := range []ingress.Telegram{
		{Secret: tgSecret, Allowed: []string{"1"}},
		{BotToken: telegramtest.Token, Secret: "short", Allowed: []string{"1"}},
		{BotToken: telegramtest.Token, Secret: tgSecret},
		{BotToken: telegramtest.Token, Secret: tgSecret, Allowed: []string{"@someone"}},
	} {
		if _, err := ingress.New(ingress.Config{Telegram: &tc}, ns.JS, zerolog.New(io.Discard)); err == nil {
			t.Errorf("%+v: no error", tc)
		}
	}
}

// FuzzTelegramWebhook: whatever an update holds, the webhook answers 200,
// 400, 403 or 413, and never fails or panics.
func FuzzTelegramWebhook(f *testing.F) {
	f.Add(telegramtest.Update(1, 4242, "echo hi", ""), true)
	f.Add(telegramtest.Update(2, 4242, "", "FILE"), true)
	f.Add([]byte(`{"update_id":3,"message":{"chat":{"id":"4242"},"photo":[]}}`), true)
	f.Add([]byte(`{"update_id":-1,"message":{"chat":{"id":99999999999999999999}}}`), true)
	f.Add([]byte(`{"update_id":4,"message":{"chat":{"id":4242},"document":{"file_id":"d","mime_type":"application/pdf"}}}`), false)
	_, post := startTelegram(f, telegramtest.NewAPI(f))
	f.Fuzz(func(t *testing.T, body []byte, secret bool) {
		s := ""
		if secret {
			s = tgSecret
		}
		switch code := post(t, s, body); code {
		case 200, 400, 403, 413:
		default:
			t.Fatalf("status %d for %q", code, body)
		}
	})
}
