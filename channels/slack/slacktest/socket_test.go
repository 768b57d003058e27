package slacktest

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Slack pings each Socket Mode connection; an app that hears no ping for
// 30 s takes the connection as dead (slack-go's maxPingInterval), so the
// fake must ping too.
func TestSocketModePinged(t *testing.T) {
	defer func(d time.Duration) { PingEvery = d }(PingEvery)
	PingEvery = 50 * time.Millisecond
	s := New(t)
	conn, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(s.URL(), "http")+"/link?ticket=fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pinged := make(chan struct{}, 1)
	conn.SetPingHandler(func(string) error {
		select {
		case pinged <- struct{}{}:
		default:
		}
		return nil
	})
	go func() {
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return
			}
		}
	}()
	select {
	case <-pinged:
	case <-time.After(5 * time.Second):
		t.Fatal("no ping in 5 s (PingEvery 50 ms)")
	}
}
