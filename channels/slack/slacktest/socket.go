package slacktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// socket is the Socket Mode side: the app's connections and the
// envelopes they acknowledged.
type socket struct {
	mu        sync.Mutex
	conns     []*websocket.Conn
	connected chan struct{} // closed at the first hello
	envelopes int
	acks      map[string]chan json.RawMessage // by envelope_id: its acknowledgement
}

func (k *socket) init() {
	k.connected = make(chan struct{})
	k.acks = map[string]chan json.RawMessage{}
}

func (k *socket) closeAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		_ = c.Close()
	}
}

// connectionsOpen answers apps.connections.open (app-level token) with a
// one-time websocket URL.
func (s *Server) connectionsOpen(*http.Request) map[string]any {
	return map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/link?ticket=fake"}
}

// upgrader takes the app's connection, whose Origin is Slack's
// (https://api.slack.com, as slack-go and Slack's SDKs send it), not the
// fake's host.
var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// PingEvery is how often the fake pings each Socket Mode connection, as
// Slack does: Slack's SDKs (slack-go, @slack/socket-mode) take a
// connection without a server ping for 30 s as dead and open another.
var PingEvery = 10 * time.Second

// socketMode is the websocket of Socket Mode: it says hello, pings every
// PingEvery, relays the envelopes tests deliver and takes the app's
// acknowledgements.
func (s *Server) socketMode(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	k := &s.socket
	k.mu.Lock()
	k.conns = append(k.conns, conn)
	n := len(k.conns)
	err = conn.WriteJSON(map[string]any{"type": "hello", "num_connections": n,
		"debug_info":      map[string]any{"host": "applink-fake", "approximate_connection_time": 18060},
		"connection_info": map[string]any{"app_id": AppID}})
	if err == nil && n == 1 {
		close(k.connected)
	}
	k.mu.Unlock()
	done := make(chan struct{})
	defer close(done)
	go ping(conn, done)
	for err == nil {
		var ack struct {
			EnvelopeID string          `json:"envelope_id"`
			Payload    json.RawMessage `json:"payload"`
		}
		if err = conn.ReadJSON(&ack); err != nil {
			break
		}
		k.mu.Lock()
		if ch, ok := k.acks[ack.EnvelopeID]; ok {
			select {
			case ch <- ack.Payload:
			default: // acknowledged twice: the first counts
			}
		}
		k.mu.Unlock()
	}
	_ = conn.Close()
}

// ping pings conn every PingEvery until done (WriteControl may run beside
// the other writes).
func ping(conn *websocket.Conn, done <-chan struct{}) {
	t := time.NewTicker(PingEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) != nil {
				return
			}
		}
	}
}

// Connected waits for the app's first Socket Mode connection.
func (s *Server) Connected(ctx context.Context) error {
	select {
	case <-s.socket.connected:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("no socket mode connection: %w", ctx.Err())
	}
}

// Connections waits until the app has opened n Socket Mode connections
// in all (a restarted app opens a new one), and Deliver uses the newest.
func (s *Server) Connections(ctx context.Context, n int) error {
	for {
		have := s.Opened()
		if have >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d socket mode connections, not %d: %w", have, n, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Opened is how many Socket Mode connections the app has opened in all.
func (s *Server) Opened() int {
	s.socket.mu.Lock()
	defer s.socket.mu.Unlock()
	return len(s.socket.conns)
}

// ErrNotAcknowledged is Deliver's error when ctx ended before the app
// acknowledged the envelope (Slack would deliver it again).
var ErrNotAcknowledged = errors.New("slacktest: envelope not acknowledged")

// Deliver sends one envelope of kind ("events_api", "interactive") with
// payload over the newest connection, as retry number retry, and waits for
// its acknowledgement; ErrNotAcknowledged when ctx ends first.
func (s *Server) Deliver(ctx context.Context, kind string, payload []byte, retry int) error {
	k := &s.socket
	ack := make(chan json.RawMessage, 1)
	k.mu.Lock()
	if len(k.conns) == 0 {
		k.mu.Unlock()
		return errors.New("slacktest: no socket mode connection")
	}
	k.envelopes++
	id := fmt.Sprintf("env-%d", k.envelopes)
	k.acks[id] = ack
	env := map[string]any{"envelope_id": id, "type": kind, "payload": json.RawMessage(payload),
		"accepts_response_payload": false, "retry_attempt": retry}
	if retry > 0 {
		env["retry_reason"] = "timeout"
	}
	err := k.conns[len(k.conns)-1].WriteJSON(env)
	k.mu.Unlock()
	if err != nil {
		return fmt.Errorf("slacktest: deliver: %w", err)
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %s", ErrNotAcknowledged, id)
	}
}
