package discordtest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Gateway opcodes (topics/opcodes-and-status-codes#gateway).
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// Gateway intents the fake looks at (topics/gateway#list-of-intents).
const (
	IntentGuildMembers   = 1 << 1
	IntentGuildPresences = 1 << 8
	IntentGuildMessages  = 1 << 9
	IntentDirectMessages = 1 << 12
	IntentMessageContent = 1 << 15
)

// ErrNoSession: nothing can be dispatched before a bot identified.
var ErrNoSession = errors.New("discordtest: no gateway session (the bot has not identified)")

// gateway is the fake's one shard: one session, its events numbered and
// kept so that a RESUME replays what a dropped connection missed.
type gateway struct {
	server *Server

	mu         sync.Mutex // held for every write, so that events go out in order
	conn       *websocket.Conn
	all        []*websocket.Conn
	session    string
	seq        int64
	events     []event
	intents    int
	identifies int
	resumes    int
	heartbeats int
}

type event struct {
	seq  int64
	data []byte
}

type payload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// serve is one gateway connection: HELLO, then the bot's IDENTIFY or
// RESUME, heartbeats answered with ACKs, until the connection ends.
func (g *gateway) serve(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	g.mu.Lock()
	g.all = append(g.all, c)
	g.writeLocked(c, opHello, map[string]int64{"heartbeat_interval": g.server.opts.HeartbeatInterval.Milliseconds()})
	g.mu.Unlock()
	for {
		var p payload
		if err := c.ReadJSON(&p); err != nil {
			g.lost(c)
			return
		}
		g.mu.Lock()
		switch p.Op {
		case opHeartbeat:
			g.heartbeats++
			g.writeLocked(c, opHeartbeatACK, nil)
		case opIdentify:
			g.identify(c, p.D)
		case opResume:
			g.resume(c, p.D)
		}
		g.mu.Unlock()
	}
}

// identify starts a new session on c: READY, its events numbered from 1
// (mu held). A wrong token closes with 4004, a privileged intent the app
// was not granted with 4014.
func (g *gateway) identify(c *websocket.Conn, d json.RawMessage) {
	var id struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
	}
	json.Unmarshal(d, &id)
	if strings.TrimPrefix(id.Token, "Bot ") != g.server.opts.Token {
		closeWith(c, 4004, "Authentication failed.")
		return
	}
	privileged := IntentGuildMembers | IntentGuildPresences
	if !g.server.opts.MessageContent {
		privileged |= IntentMessageContent
	}
	if id.Intents&privileged != 0 {
		closeWith(c, 4014, "Disallowed intent(s).")
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	g.session, g.seq, g.events, g.intents, g.conn = hex.EncodeToString(b), 0, nil, id.Intents, c
	g.identifies++
	ws := "ws" + strings.TrimPrefix(g.server.URL, "http") + "/gateway"
	g.dispatchLocked("READY", map[string]any{"v": 10, "user": g.server.Bot, "guilds": []any{}, "session_id": g.session,
		"resume_gateway_url": ws, "application": map[string]any{"id": g.server.AppID, "flags": 0}})
}

// resume takes c on as the session's connection and replays the events
// after the bot's last sequence, then RESUMED; an unknown session gets
// INVALID_SESSION (not resumable), after which a bot identifies (mu held).
func (g *gateway) resume(c *websocket.Conn, d json.RawMessage) {
	var rs struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	json.Unmarshal(d, &rs)
	if strings.TrimPrefix(rs.Token, "Bot ") != g.server.opts.Token {
		closeWith(c, 4004, "Authentication failed.")
		return
	}
	if rs.SessionID == "" || rs.SessionID != g.session {
		g.writeLocked(c, opInvalidSession, false)
		return
	}
	g.conn = c
	g.resumes++
	for _, e := range g.events {
		if e.seq > rs.Seq && g.conn != nil {
			g.send(e.data)
		}
	}
	g.dispatchLocked("RESUMED", map[string]any{})
}

// lost forgets c, ended.
func (g *gateway) lost(c *websocket.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conn == c {
		g.conn = nil
	}
}

// dispatchLocked numbers an event, keeps it and sends it if the session
// is connected (mu held).
func (g *gateway) dispatchLocked(t string, d any) int64 {
	g.seq++
	data, _ := json.Marshal(d)
	seq := g.seq
	frame, _ := json.Marshal(payload{Op: opDispatch, D: data, S: &seq, T: t})
	g.events = append(g.events, event{seq: seq, data: frame})
	if g.conn != nil {
		g.send(frame)
	}
	return seq
}

// send writes a frame to the session's connection, dropped on failure.
func (g *gateway) send(frame []byte) {
	if err := g.conn.WriteMessage(websocket.TextMessage, frame); err != nil {
		g.conn = nil
	}
}

func (g *gateway) writeLocked(c *websocket.Conn, op int, d any) {
	data, _ := json.Marshal(d)
	c.WriteJSON(payload{Op: op, D: data})
}

func closeWith(c *websocket.Conn, code int, text string) {
	c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	c.Close()
}

// message dispatches MESSAGE_CREATE (ErrNoSession before any IDENTIFY) for m in a channel of kind when the
// session's intents ask for it, its content blanked as Discord does
// without MESSAGE_CONTENT (not in DMs, nor for the bot's own messages or
// those mentioning it).
func (g *gateway) message(m Message, kind int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.session == "" {
		return ErrNoSession
	}
	want := IntentGuildMessages
	if kind == DM {
		want = IntentDirectMessages
	}
	if g.intents&want == 0 {
		return nil
	}
	bot := g.server.Bot.ID
	mentioned := false
	for _, u := range m.Mentions {
		mentioned = mentioned || u.ID == bot
	}
	if kind != DM && m.Author.ID != bot && !mentioned && g.intents&IntentMessageContent == 0 {
		m.Content, m.Attachments, m.Components = "", []Attachment{}, []Component{}
	}
	g.dispatchLocked("MESSAGE_CREATE", m)
	return nil
}

func (g *gateway) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.all {
		c.Close()
	}
	g.conn = nil
}
