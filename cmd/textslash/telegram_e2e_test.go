package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/telegramtest"
)

const tgSecret = "e2e-telegram-secret-0123"

// telegramEnv turns Telegram on against the fake Bot API, for chat 4242.
func telegramEnv(api *telegramtest.API) []string {
	return []string{
		"TELEGRAM_BOT_TOKEN=" + telegramtest.Token,
		"TELEGRAM_WEBHOOK_SECRET=" + tgSecret,
		"TELEGRAM_ALLOWED_CHATS=4242",
		"TEXTSLASH_TELEGRAM_API_URL=" + api.URL,
	}
}

// telegramUpdate posts an update as Telegram does, with secret.
func telegramUpdate(t *testing.T, inst *instance, secret string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, inst.URL+"/telegram/webhook", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// An update in → the agent's reply, text and photo, out through the Bot
// API (uploaded: no PUBLIC_URL); the same update again runs nothing; a
// forged one is refused.
func TestTelegramEndToEnd(t *testing.T) {
	src := sharedDir(t)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(src, "shot.png")
	if err := os.WriteFile(shot, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	api := telegramtest.NewAPI(t)
	inst := startServe(t, append(telegramEnv(api), "TEXTSLASH_AGENT=shell", "TEXTSLASH_SANDBOX_SHARE="+src)...)
	update := telegramtest.Update(10, 4242, "mkdir -p tmp/ai_screenshots && cp "+shot+" tmp/ai_screenshots/ && echo here it is", "")
	for range 2 {
		if code := telegramUpdate(t, inst, tgSecret, update); code != http.StatusOK {
			t.Fatalf("update: %d", code)
		}
	}
	if code := telegramUpdate(t, inst, "forged-secret-0123456789", telegramtest.Update(11, 4242, "echo forged", "")); code != http.StatusForbidden {
		t.Errorf("forged update: %d; want 403", code)
	}
	api.WaitCalls(t, 1, 15*time.Second)
	// The duplicate update and the forged one would show by now.
	natstest.HoldsUntil(t, time.Now().Add(500*time.Millisecond), func() error {
		if calls := api.Calls(); len(calls) != 1 {
			return fmt.Errorf("%d calls; want the one reply: %+v", len(calls), calls)
		}
		return nil
	})
	c := api.Calls()[0]
	if c.Method != "sendPhoto" || c.ChatID != "4242" || c.Text != "here it is" || len(c.Photos) != 1 || c.Photos[0] == "" {
		t.Errorf("reply %+v; want a photo captioned \"here it is\" to chat 4242", c)
	}
}

// The same flow on the web chat, WhatsApp and Telegram at the same time:
// each person gets their own reply on their own channel, and only that.
func TestThreeChannelsAtOnce(t *testing.T) {
	tg := telegramtest.NewAPI(t)
	s := startTwilioServe(t, telegramEnv(tg)...)
	c := s.newChat(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)

	id := c.send("sleep 0.3; echo from the web")
	s.webhook(t, "whatsapp:"+phoneAlice, "sleep 0.3; echo from whatsapp", nil)
	if code := telegramUpdate(t, s.instance, tgSecret, telegramtest.Update(20, 4242, "sleep 0.3; echo from telegram", "")); code != http.StatusOK {
		t.Fatalf("telegram update: %d", code)
	}
	web := waitFor(t, events, 15*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id })
	s.api.WaitMessages(t, 1, 15*time.Second)
	tg.WaitCalls(t, 1, 15*time.Second)
	// Nobody's reply goes out twice, or on another's channel too.
	natstest.HoldsUntil(t, time.Now().Add(500*time.Millisecond), func() error {
		if wa, tgCalls := s.api.Messages(), tg.Calls(); len(wa) != 1 || len(tgCalls) != 1 {
			return fmt.Errorf("whatsapp messages %+v and telegram calls %+v; want one each", wa, tgCalls)
		}
		return nil
	})
	if web.Event.Text != "from the web" {
		t.Errorf("web chat reply %q", web.Event.Text)
	}
	if wa := s.api.Messages(); len(wa) != 1 || wa[0].Body != "from whatsapp" || wa[0].To != "whatsapp:"+phoneAlice {
		t.Errorf("whatsapp messages %+v; want one, \"from whatsapp\"", wa)
	}
	tgCalls := tg.Calls()
	var texts []string
	for _, call := range tgCalls {
		texts = append(texts, call.Text)
	}
	if !slices.Equal(texts, []string{"from telegram"}) || tgCalls[0].ChatID != "4242" {
		t.Errorf("telegram calls %+v; want one, \"from telegram\" to 4242", tgCalls)
	}
}

// A newcomer's Telegram: the bot token and the chats, no PUBLIC_URL, no
// webhook secret. textslash polls the bot's updates, says so in its log,
// and answers.
func TestTelegramPollingEndToEnd(t *testing.T) {
	api := telegramtest.NewAPI(t)
	inst := startServe(t, "TELEGRAM_BOT_TOKEN="+telegramtest.Token, "TELEGRAM_ALLOWED_CHATS=4242",
		"TEXTSLASH_TELEGRAM_API_URL="+api.URL, "TEXTSLASH_AGENT=shell")
	api.Send(telegramtest.Update(1, 4242, "echo polled", ""))
	if c := api.WaitCalls(t, 1, 20*time.Second)[0]; c.Method != "sendMessage" || c.ChatID != "4242" || c.Text != "polled" {
		t.Fatalf("reply %+v; want polled to chat 4242", c)
	}
	log, err := os.ReadFile(inst.Log)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(log, []byte("telegram: polling for the bot's updates")) {
		t.Errorf("the log does not say Telegram is polled")
	}
	if code := telegramUpdate(t, inst, "", telegramtest.Update(2, 4242, "echo posted", "")); code == http.StatusOK {
		t.Errorf("an update posted without a webhook secret: %d; want it refused (no webhook served)", code)
	}
}
