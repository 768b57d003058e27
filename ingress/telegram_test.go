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
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/telegram"

	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/telegramtest"
)

const tgSecret = "telegram-secret-0123456789"

func startTelegram(t testing.TB, api *telegramtest.API) (*twilioHarness, func(t testing.TB, secret string, body []byte) int) {
	t.Helper()
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	tg := telegramChannel(t, ns.JS, telegram.Config{
		BotToken: telegramtest.Token, Secret: tgSecret, Allowed: []string{"4242", "-100777"}, APIURL: api.URL,
	})
	in, err := ingress.New(ingress.Config{Channels: []channel.Channel{tg}}, ns.JS, zerolog.New(io.Discard))
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
		req, _ := http.NewRequest(http.MethodPost, srv.URL+telegram.WebhookPath, bytes.NewReader(body))
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
		{"voice note", tgSecret, []byte(`{"update_id": 8, "message": {"message_id": 8, "date": 1, "chat": {"id": 4242, "type": "private"},
			"voice": {"file_id": "VOICE1", "file_unique_id": "v1", "duration": 7, "mime_type": "audio/ogg", "file_size": 9000}}}`), 200},
		{"document", tgSecret, []byte(`{"update_id": 9, "message": {"message_id": 9, "date": 1, "chat": {"id": 4242, "type": "private"}, "caption": "read this",
			"document": {"file_id": "DOC1", "file_unique_id": "d1", "file_name": "../Q3 report.pdf", "mime_type": "application/pdf", "file_size": 1000}}}`), 200},
		{"audio file", tgSecret, []byte(`{"update_id": 10, "message": {"message_id": 10, "date": 1, "chat": {"id": 4242, "type": "private"},
			"audio": {"file_id": "AUD1", "file_unique_id": "a1", "duration": 200, "file_name": "song.mp3", "mime_type": "audio/mpeg"}}}`), 200},
	} {
		if got := post(t, tc.secret, tc.body); got != tc.want {
			t.Errorf("%s: status %d; want %d", tc.name, got, tc.want)
		}
	}
	got := h.inbound()
	if len(got) != 6 {
		t.Fatalf("%d inbound messages; want 6: %+v", len(got), got)
	}
	for i, want := range []contract.Media{
		{URL: "telegram:VOICE1", ContentType: "audio/ogg", Voice: true, Seconds: 7},
		{URL: "telegram:DOC1", ContentType: "application/pdf", Name: "../Q3 report.pdf"},
		{URL: "telegram:AUD1", ContentType: "audio/mpeg", Name: "song.mp3", Seconds: 200},
	} {
		if m := got[3+i].Media; len(m) != 1 || m[0] != want {
			t.Errorf("inbound %d: media %+v; want %+v", 3+i, m, want)
		}
	}
	if got[4].Text != "read this" {
		t.Errorf("document caption: %q", got[4].Text)
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
	// on is the channel whose fetch subject is asked: a request for a
	// person of another channel is refused there.
	ask := func(on string, u contract.User, mediaURL string) (contract.Image, string) {
		data, _ := contract.Encode(&contract.MediaFetch{User: u, Media: contract.Media{URL: mediaURL, ContentType: "image/jpeg"}})
		var code string
		var img contract.Image
		natstest.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
			resp, err := h.js.Conn().Request(contract.MediaFetchSubject(on), data, 5*time.Second)
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
	img, code := ask(contract.ChannelTelegram, got[1].User, "telegram:FILE1")
	if code != "" || img.ContentType != "image/png" || img.Size != buf.Len() {
		t.Errorf("fetch: %+v, error %q; want the png", img, code)
	}
	if _, code := ask(contract.ChannelTelegram, got[1].User, "telegram:NOSUCH"); code != "502" {
		t.Errorf("unknown file: error %q; want 502", code)
	}
	if _, code := ask(contract.ChannelTelegram, contract.User{Channel: contract.ChannelWhatsApp, ID: "15551230001"}, "telegram:FILE1"); code != "403" {
		t.Errorf("a Telegram file for a WhatsApp user: error %q; want 403", code)
	}
}

// A button pressed in an allowed chat is the person's reply: published
// once however often Telegram sends the press, which is answered (the
// button stops spinning) and shown under the message, its buttons gone.
// Presses without the secret, in chats not allowed or of buttons that
// are no reply publish nothing.
func TestTelegramButtons(t *testing.T) {
	api := telegramtest.NewAPI(t)
	h, post := startTelegram(t, api)
	answers := [][]telegramtest.Button{{{Text: "Yes", Data: "yes"}, {Text: "No", Data: "no"}, {Text: "Always", Data: "always"}}}
	question := api.AddMessage(4242, "May I run `rm -rf build`?", answers)
	approval := api.AddMessage(4242, strings.Repeat("diff ", 819), [][]telegramtest.Button{{{Text: "Approve", Data: "approve"}, {Text: "Reject", Data: "reject"}}})
	elsewhere := api.AddMessage(999, "May I?", answers)
	yes, approve := api.Callback(1, 4242, question, "yes"), api.Callback(5, 4242, approval, "approve")

	for _, tc := range []struct {
		name   string
		secret string
		body   []byte
		want   int
	}{
		{"yes", tgSecret, yes, 200},
		{"retry of the same press", tgSecret, yes, 200},
		{"no secret", "", api.Callback(2, 4242, question, "no"), 403},
		{"chat not allowed", tgSecret, api.Callback(3, 999, elsewhere, "yes"), 200},
		{"not a reply", tgSecret, api.Callback(4, 4242, question, "rm -rf /"), 200},
		{"approve under a long text", tgSecret, approve, 200},
	} {
		if got := post(t, tc.secret, tc.body); got != tc.want {
			t.Errorf("%s: status %d; want %d", tc.name, got, tc.want)
		}
	}
	if all, mine := len(h.stored(contract.StreamIn, "")), len(h.stored(contract.StreamIn, "ts.in.telegram.4242")); all != 2 || mine != 2 {
		t.Fatalf("%d inbound messages, %d on ts.in.telegram.4242; want 2, both there", all, mine)
	}
	got := h.inbound()
	for i, w := range []struct {
		press []byte
		text  string
	}{{yes, "yes"}, {approve, "approve"}} {
		if id := "tgcb" + queryID(t, w.press); got[i].ID != id || got[i].User.Key() != "telegram.4242" || got[i].Text != w.text {
			t.Errorf("inbound %d: %+v; want id %s, user telegram.4242, text %q", i, got[i], id, w.text)
		}
	}

	// Each press answered once (Telegram refuses the retry's answer and
	// edit, which the webhook only logs); the question shows the reply, the
	// text too long to add to loses its buttons only.
	calls := api.Calls()
	want := []telegramtest.Call{
		{Method: "answerCallbackQuery", QueryID: queryID(t, yes)},
		{Method: "editMessageText", ChatID: "4242", MessageID: question, Text: "May I run `rm -rf build`?\n\n→ Yes", NoLinkPreview: true},
		{Method: "answerCallbackQuery", QueryID: queryID(t, approve)},
		{Method: "editMessageReplyMarkup", ChatID: "4242", MessageID: approval},
	}
	if len(calls) != len(want) || api.Attempts() != len(want)+2 {
		t.Fatalf("%d Bot API calls taken of %d; want %d taken, and the retry's 2 refused: %+v", len(calls), api.Attempts(), len(want), calls)
	}
	for i, w := range want {
		c := calls[i]
		// An edited text keeps its links' previews off, as egress sent it.
		if c.Method != w.Method || c.QueryID != w.QueryID || c.ChatID != w.ChatID || c.MessageID != w.MessageID || c.Text != w.Text || c.Keyboard != nil || c.NoLinkPreview != w.NoLinkPreview {
			t.Errorf("call %d: %+v; want %+v without a keyboard", i, c, w)
		}
	}
}

// queryID is the id of the callback query in an update.
func queryID(t *testing.T, update []byte) string {
	t.Helper()
	var u struct {
		CallbackQuery struct{ ID string } `json:"callback_query"`
	}
	if err := json.Unmarshal(update, &u); err != nil || u.CallbackQuery.ID == "" {
		t.Fatalf("no callback query in %s: %v", update, err)
	}
	return u.CallbackQuery.ID
}

// FuzzTelegramWebhook: whatever an update holds, the webhook answers 200,
// 400, 403 or 413, and never fails or panics.
func FuzzTelegramWebhook(f *testing.F) {
	f.Add(telegramtest.Update(1, 4242, "echo hi", ""), true)
	f.Add(telegramtest.Update(2, 4242, "", "FILE"), true)
	f.Add([]byte(`{"update_id":3,"message":{"chat":{"id":"4242"},"photo":[]}}`), true)
	f.Add([]byte(`{"update_id":-1,"message":{"chat":{"id":99999999999999999999}}}`), true)
	f.Add([]byte(`{"update_id":4,"message":{"chat":{"id":4242},"document":{"file_id":"d","mime_type":"application/pdf"}}}`), false)
	f.Add([]byte(`{"update_id":5,"callback_query":{"id":"77","message":{"message_id":1,"date":1,"chat":{"id":4242,"type":"private"},"text":"May I?"},"data":"yes"}}`), true)
	f.Add([]byte(`{"update_id":6,"callback_query":{"id":"x:y","message":{"message_id":1,"date":0,"chat":{"id":4242}},"data":"no"}}`), true)
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
