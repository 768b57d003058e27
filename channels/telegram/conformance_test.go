package telegram_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/telegram"
	"github.com/textslash/textslash/channeltest"
	"github.com/textslash/textslash/telegramtest"
)

// The Telegram channel passes the conformance suite, its updates posted to
// its webhook as Telegram posts them. A person is a chat: Telegram has no
// conversation of a person's but their chat with the bot, and no way to
// look a sent message up (no Finder).
func TestConformance(t *testing.T) {
	t.Run("kit", func(t *testing.T) { channeltest.Run(t, telegramProvider) })
	t.Run("ingress and egress", func(t *testing.T) { channeltest.RunBuiltIn(t, telegramProvider) })
}

// telegramProvider is the suite's fake, for one case.
func telegramProvider(t *testing.T) channeltest.Provider {
	f := &telegramFake{t: t, api: telegramtest.NewAPI(t)}
	return channeltest.Provider{
		Channel: f.channel, Person: "4242", Stranger: "6666", Direct: func(p string) string { return p },
		Write: f.write, Press: f.press, Serve: f.serve, Spoof: f.spoof, Sent: f.sent,
	}
}

// telegramFake is the suite's Telegram: the fake Bot API, and the webhook
// of the channel made last.
type telegramFake struct {
	t       *testing.T
	api     *telegramtest.API
	webhook atomic.Pointer[httptest.Server]
	updates atomic.Int64
}

// channel makes the channel on the fake, allowing chat 4242, with a
// webhook (an https public URL and its secret).
func (f *telegramFake) channel() channel.Channel {
	tg, err := telegram.New(telegram.Config{BotToken: telegramtest.Token, APIURL: f.api.URL, Allowed: []string{"4242"},
		PublicURL: "https://textslash.example.com", Secret: secret}, nil, zerolog.New(zerolog.NewTestWriter(f.t)))
	if err != nil {
		f.t.Fatal(err)
	}
	return tg
}

// serve takes the webhook's route: the fake's updates are posted there.
func (f *telegramFake) serve(t *testing.T, routes http.Handler) {
	srv := httptest.NewServer(routes)
	t.Cleanup(srv.Close)
	f.webhook.Store(srv)
}

// write posts who's message as an update, as Telegram does until it is
// answered 200; again posts the same update (same update_id) once more.
func (f *telegramFake) write(t *testing.T, who, _, text string) func() {
	t.Helper()
	chat, err := strconv.ParseInt(who, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	upd := telegramtest.Update(int(f.updates.Add(1)), chat, text, "")
	f.deliver(t, upd)
	return func() { f.deliver(t, upd) }
}

// press posts the press of choice under m as a callback query.
func (f *telegramFake) press(t *testing.T, who string, m channeltest.Sent, choice string) {
	t.Helper()
	chat, _ := strconv.ParseInt(who, 10, 64)
	id, err := strconv.Atoi(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	f.deliver(t, f.api.Callback(int(f.updates.Add(1)), chat, id, choice))
}

// deliver posts an update with the webhook's secret, again while it is
// answered 503 (Telegram does), until 200.
func (f *telegramFake) deliver(t *testing.T, upd []byte) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code := f.post(t, upd, secret)
		if code == http.StatusOK {
			return
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("update posted: %d; want 200", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// post posts an update to the webhook with the secret given; its status.
func (f *telegramFake) post(t *testing.T, upd []byte, secret string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.webhook.Load().URL+telegram.WebhookPath, bytes.NewReader(upd))
	if err != nil {
		t.Fatal(err)
	}
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

// spoof posts the person's message without the webhook's secret, as
// anyone who found the URL could: refused (403).
func (f *telegramFake) spoof(t *testing.T, text string) error {
	upd := telegramtest.Update(int(f.updates.Add(1)), 4242, text, "")
	if code := f.post(t, upd, "not-the-secret-0123456789"); code != http.StatusForbidden {
		t.Errorf("an update without the webhook's secret: %d; want 403", code)
	}
	return nil
}

// sent is what the bot sent, by message, its edits applied, its buttons'
// callback data read from its keyboard.
func (f *telegramFake) sent() []channeltest.Sent {
	var out []channeltest.Sent
	at := map[string]int{}
	for _, c := range f.api.Calls() {
		key := fmt.Sprint(c.ChatID, ":", c.MessageID)
		switch c.Method {
		case "sendMessage", "sendPhoto", "sendDocument":
			at[key] = len(out)
			out = append(out, channeltest.Sent{Conversation: c.ChatID, ID: strconv.Itoa(c.MessageID), Text: c.Text, Choices: choices(c.Keyboard)})
		case "editMessageText":
			if i, ok := at[key]; ok {
				out[i].Text, out[i].Edits = c.Text, out[i].Edits+1
			}
		}
	}
	return out
}

// choices are the callback data of a keyboard's buttons, in order.
func choices(rows [][]telegramtest.Button) []string {
	var out []string
	for _, row := range rows {
		for _, b := range row {
			if b.Data != "" {
				out = append(out, b.Data)
			}
		}
	}
	return out
}
