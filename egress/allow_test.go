package egress_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/channels/twilio"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// refusedMsg is egress's log line for an event it will not send.
const refusedMsg = "event for a user not allowed dropped: nobody on the channel's allowlist (its ALLOWED setting: ALLOWED_PHONE_NUMBERS, TELEGRAM_ALLOWED_CHATS, SLACK_ALLOWED, DISCORD_ALLOWED) or paired in sent it; something else published it"

// An event for a number nobody allowed — published by anyone who can
// write to EVENTS — is never sent: no toll fraud, no phishing from the
// operator's number. Allowed people are answered as before.
func TestTwilioAnswersOnlyAllowedNumbers(t *testing.T) {
	var logs natstest.Logs
	h, cfg := prepare(t, twilio.Config{})
	h.logs = &logs
	h.run(cfg)
	stranger := contract.User{Channel: contract.ChannelSMS, ID: "15559990000"}
	h.publish(contract.Event{Kind: contract.KindDone, User: stranger, Text: "your account is locked: http://phish.example", Status: contract.StatusOK})
	h.publish(contract.Event{Kind: contract.KindNotice, User: contract.User{Channel: contract.ChannelWhatsApp, ID: stranger.ID}, Text: "hi"})
	h.publish(contract.Event{Kind: contract.KindDone, User: alice, Text: "for alice", Status: contract.StatusOK})
	msgs := h.api.WaitMessages(t, 1, 10*time.Second)
	waitLog(t, &logs, 2)
	for _, m := range h.api.Messages() {
		if strings.Contains(m.To, stranger.ID) {
			t.Errorf("sent to a number nobody allowed: %+v", m)
		}
	}
	if len(msgs) != 1 || msgs[0].Body != "for alice" {
		t.Errorf("sent %+v; want alice's reply only", msgs)
	}
}

// The same on Telegram: only allowed chats are answered.
func TestTelegramAnswersOnlyAllowedChats(t *testing.T) {
	h := startTelegram(t, false)
	h.publish(contract.Event{Kind: contract.KindDone, User: contract.User{Channel: contract.ChannelTelegram, ID: "999"}, Text: "to a stranger", Status: contract.StatusOK})
	h.publish(contract.Event{Kind: contract.KindDone, Text: "to carol", Status: contract.StatusOK})
	calls := h.api.WaitCalls(t, 1, 10*time.Second)
	if len(calls) != 1 || calls[0].ChatID != carol.ID {
		t.Fatalf("calls %+v; want carol's reply only", calls)
	}
	waitLog(t, &h.logs, 1)
	for _, c := range h.api.Calls() {
		if c.ChatID == "999" {
			t.Errorf("sent to a chat nobody allowed: %+v", c)
		}
	}
}

// waitLog waits until egress logged n refusals.
func waitLog(t *testing.T, logs *natstest.Logs, n int) {
	t.Helper()
	natstest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if got := len(logs.Find(t, refusedMsg, nil)); got < n {
			return fmt.Errorf("%d refusals logged; want %d", got, n)
		}
		return nil
	})
}
