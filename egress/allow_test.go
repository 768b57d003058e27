package egress_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress"
)

// syncBuffer is a log both egress and the test touch.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An event for a number nobody allowed — published by anyone who can
// write to EVENTS — is never sent: no toll fraud, no phishing from the
// operator's number. Allowed people are answered as before.
func TestTwilioAnswersOnlyAllowedNumbers(t *testing.T) {
	var logs syncBuffer
	h, cfg := prepare(t, egress.Twilio{})
	h.logs = &logs
	h.run(cfg)
	stranger := contract.User{Channel: contract.ChannelSMS, ID: "15559990000"}
	h.publish(contract.Event{Kind: contract.KindDone, User: stranger, Text: "your account is locked: http://phish.example", Status: contract.StatusOK})
	h.publish(contract.Event{Kind: contract.KindNotice, User: contract.User{Channel: contract.ChannelWhatsApp, ID: stranger.ID}, Text: "hi"})
	h.publish(contract.Event{Kind: contract.KindDone, User: alice, Text: "for alice", Status: contract.StatusOK})
	msgs := h.api.WaitMessages(t, 1, 10*time.Second)
	waitLog(t, &logs, "not allowed", 2)
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
	waitLog(t, &h.logs, "not allowed", 1)
	for _, c := range h.api.Calls() {
		if c.ChatID == "999" {
			t.Errorf("sent to a chat nobody allowed: %+v", c)
		}
	}
}

// waitLog waits until the log holds n lines containing s.
func waitLog(t *testing.T, logs interface{ String() string }, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(logs.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d log lines with %q; want %d:\n%s", strings.Count(logs.String(), s), s, n, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
