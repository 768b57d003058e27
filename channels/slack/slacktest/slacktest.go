// Package slacktest is a fake of Slack for tests: the Web API methods a bot
// uses (auth.test, conversations.open, chat.postMessage, chat.update,
// conversations.history, files.getUploadURLExternal with its upload URL,
// files.completeUploadExternal, files served by their url_private_download),
// Socket Mode (apps.connections.open and its websocket: hello, events_api
// and interactive envelopes, acknowledged by envelope_id) and the signing
// of Events API requests (X-Slack-Signature v0). It is written from Slack's
// public reference (docs.slack.dev) and records what the bot sent, so that
// tests can assert on it.
//
// Every method answers HTTP 200 with {"ok": false, "error": …} when Slack
// does (a wrong token: invalid_auth), and HTTP 429 with Retry-After when a
// test asked for a rate limit (RateLimit).
package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Identities of the fake workspace.
const (
	BotToken = "xoxb-1-fake-bot-token"
	AppToken = "xapp-1-fake-app-token"
	BotUser  = "UBOT0001"
	BotID    = "BBOT0001"
	Team     = "TFAKE001"
	AppID    = "AFAKE001"
)

// Server is a fake Slack workspace with one bot.
type Server struct {
	srv *httptest.Server

	mu      sync.Mutex
	sent    []Sent
	limited map[string]int // method → Retry-After (s) of its next call
	failing map[string]string
	clock   int64 // the last ts given, in microseconds
	uploads map[string]*upload
	served  map[string]served // url path → a file people sent
	hold    func(Sent) bool
	held    chan Sent
	calls   []Call
	socket  socket
}

// Call is one Web API call the fake took, and how it answered.
type Call struct {
	Method string
	At     time.Time
	Status int // 429 when rate-limited, else 200
}

// Sent is one message the bot posted (chat.postMessage, or a share of
// files by files.completeUploadExternal) as it stands now (chat.update
// changes it; Updates counts how often).
type Sent struct {
	Method   string
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	// Blocks is the message's Block Kit JSON, if any.
	Blocks json.RawMessage
	// Metadata is the message's metadata (event_type and event_payload).
	Metadata json.RawMessage
	// Files are the files shared with the message, in order.
	Files   []File
	Updates int
}

// File is a file the bot uploaded.
type File struct {
	ID    string
	Name  string
	Title string
	Data  []byte
}

// upload is a file between files.getUploadURLExternal and its completion.
type upload struct {
	name   string
	length int
	data   []byte
}

// served is a file a person sent, downloadable with the bot token.
type served struct {
	contentType string
	data        []byte
}

// New starts a fake Slack, stopped when t ends.
func New(t testing.TB) *Server {
	s := &Server{limited: map[string]int{}, failing: map[string]string{}, uploads: map[string]*upload{}, served: map[string]served{},
		held: make(chan Sent, 1)}
	s.socket.init()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/{method}", s.api)
	mux.HandleFunc("POST /upload/{id}", s.receiveUpload)
	mux.HandleFunc("GET /files-pri/{path...}", s.serveFile)
	mux.HandleFunc("GET /link", s.socketMode)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.socket.closeAll()
		s.srv.Close()
	})
	return s
}

// APIURL is the Web API's base, for slack.OptionAPIURL.
func (s *Server) APIURL() string { return s.srv.URL + "/api/" }

// URL is the server's root.
func (s *Server) URL() string { return s.srv.URL }

// RateLimit makes the next call of method answer 429 with Retry-After.
func (s *Server) RateLimit(method string, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited[method] = retryAfter
}

// Fail makes the next call of method answer {"ok": false, "error": code}.
func (s *Server) Fail(method, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing[method] = code
}

// Hold makes the fake take a message for which hold says true (a post or
// a share: it is in the conversation, as Slack has it) but never answer
// the call, until the caller hangs up (a crash between a send and its
// answer); Held gives each message held. Hold(nil) ends it.
func (s *Server) Hold(hold func(Sent) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = hold
}

// Held is the message the fake holds, once it holds one.
func (s *Server) Held() <-chan Sent { return s.held }

// Sent is every message the bot posted, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Sent, len(s.sent))
	copy(out, s.sent)
	return out
}

// Calls are the Web API calls of method the fake took, in order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// AddFile makes a file a person sent downloadable with the bot token, and
// returns its url_private_download.
func (s *Server) AddFile(name, contentType string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := fmt.Sprintf("/files-pri/%s-F%d/download/%s", Team, len(s.served)+1, name)
	s.served[path] = served{contentType: contentType, data: data}
	return s.srv.URL + path
}

// nextTS is a message timestamp like Slack's ("1712345678.000100"): the
// time now in microseconds, each later than the last.
func (s *Server) nextTS() string {
	s.clock = max(s.clock+1, time.Now().UnixMicro())
	return fmt.Sprintf("%d.%06d", s.clock/1e6, s.clock%1e6)
}

// token is the request's token: its Authorization bearer, else its form's.
func token(r *http.Request) string {
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return b
	}
	return r.FormValue("token")
}

// api answers one Web API method.
func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	if err := r.ParseMultipartForm(32 << 20); err != nil && err != http.ErrNotMultipart {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	retry, limited := s.limited[method]
	delete(s.limited, method)
	call := Call{Method: method, At: time.Now(), Status: http.StatusOK}
	if limited {
		call.Status = http.StatusTooManyRequests
	}
	s.calls = append(s.calls, call)
	code, failing := s.failing[method]
	delete(s.failing, method)
	s.mu.Unlock()
	if limited {
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
		return
	}
	want := BotToken
	if method == "apps.connections.open" {
		want = AppToken
	}
	if token(r) != want {
		reply(w, map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	if failing {
		reply(w, map[string]any{"ok": false, "error": code})
		return
	}
	h, ok := map[string]func(*http.Request) map[string]any{
		"auth.test":                    s.authTest,
		"apps.connections.open":        s.connectionsOpen,
		"conversations.open":           s.conversationsOpen,
		"chat.postMessage":             s.postMessage,
		"chat.update":                  s.update,
		"conversations.history":        s.history,
		"files.getUploadURLExternal":   s.getUploadURL,
		"files.completeUploadExternal": s.completeUpload,
	}[method]
	if !ok {
		reply(w, map[string]any{"ok": false, "error": "unknown_method"})
		return
	}
	s.mu.Lock()
	before := len(s.sent)
	s.mu.Unlock()
	out := h(r)
	s.mu.Lock()
	var held *Sent
	if len(s.sent) > before && s.hold != nil && s.hold(s.sent[len(s.sent)-1]) {
		held = &s.sent[len(s.sent)-1]
	}
	s.mu.Unlock()
	if held != nil {
		s.held <- *held
		<-r.Context().Done()
		return
	}
	reply(w, out)
}

func reply(w http.ResponseWriter, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(code string) map[string]any { return map[string]any{"ok": false, "error": code} }

func (s *Server) authTest(*http.Request) map[string]any {
	return map[string]any{"ok": true, "url": "https://fake.slack.com/", "team": "Fake", "user": "textslash",
		"team_id": Team, "user_id": BotUser, "bot_id": BotID}
}

// conversationsOpen opens the DM with one user: its id is "D" and the
// user's id without its first letter.
func (s *Server) conversationsOpen(r *http.Request) map[string]any {
	users := r.FormValue("users")
	if users == "" || strings.Contains(users, ",") {
		return fail("users_list_not_supplied")
	}
	return map[string]any{"ok": true, "channel": map[string]any{"id": DM(users)}}
}

// DM is the id of the bot's direct-message conversation with user.
func DM(user string) string { return "D" + strings.TrimLeft(user, "UW") }

// channelOf is the conversation a message to channel goes to: a user's
// id means the DM with them.
func channelOf(channel string) string {
	if strings.HasPrefix(channel, "U") || strings.HasPrefix(channel, "W") {
		return DM(channel)
	}
	return channel
}

func (s *Server) postMessage(r *http.Request) map[string]any {
	ch := r.FormValue("channel")
	text, blocks := r.FormValue("text"), r.FormValue("blocks")
	switch {
	case ch == "":
		return fail("channel_not_found")
	case text == "" && blocks == "":
		return fail("no_text")
	case len([]rune(text)) > 40000:
		return fail("msg_too_long")
	}
	if blocks != "" && !json.Valid([]byte(blocks)) {
		return fail("invalid_blocks")
	}
	m := Sent{Method: "chat.postMessage", Channel: channelOf(ch), ThreadTS: r.FormValue("thread_ts"), Text: text}
	if blocks != "" {
		m.Blocks = json.RawMessage(blocks)
	}
	if md := r.FormValue("metadata"); md != "" {
		m.Metadata = json.RawMessage(md)
	}
	s.mu.Lock()
	m.TS = s.nextTS()
	s.sent = append(s.sent, m)
	s.mu.Unlock()
	return map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS,
		"message": map[string]any{"type": "message", "text": text, "ts": m.TS, "bot_id": BotID, "user": BotUser}}
}

func (s *Server) update(r *http.Request) map[string]any {
	ch, ts := r.FormValue("channel"), r.FormValue("ts")
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.sent {
		if m := &s.sent[i]; m.Channel == ch && m.TS == ts {
			m.Text, m.Updates = r.FormValue("text"), m.Updates+1
			m.Blocks = nil
			if b := r.FormValue("blocks"); b != "" && b != "[]" {
				m.Blocks = json.RawMessage(b)
			}
			return map[string]any{"ok": true, "channel": ch, "ts": ts, "text": m.Text}
		}
	}
	return fail("message_not_found")
}

// history lists the bot's messages in a conversation, newest first, since
// oldest; with their metadata when include_all_metadata is set.
func (s *Server) history(r *http.Request) map[string]any {
	ch, oldest := r.FormValue("channel"), r.FormValue("oldest")
	withMeta := r.FormValue("include_all_metadata") == "true" || r.FormValue("include_all_metadata") == "1" // Slack reads booleans either way
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs := []map[string]any{}
	for i := len(s.sent) - 1; i >= 0; i-- {
		m := s.sent[i]
		if m.Channel != ch || (oldest != "" && tsAfter(oldest, m.TS)) {
			continue
		}
		out := map[string]any{"type": "message", "text": m.Text, "ts": m.TS, "bot_id": BotID, "user": BotUser}
		if withMeta && m.Metadata != nil {
			out["metadata"] = m.Metadata
		}
		if len(m.Files) > 0 {
			var files []map[string]any
			for _, f := range m.Files {
				files = append(files, map[string]any{"id": f.ID, "name": f.Name, "title": f.Title, "size": len(f.Data)})
			}
			out["files"], out["subtype"], out["upload"] = files, "file_share", true
		}
		msgs = append(msgs, out)
	}
	return map[string]any{"ok": true, "messages": msgs, "has_more": false}
}

// tsAfter reports whether Slack timestamp a is later than b.
func tsAfter(a, b string) bool {
	fa, _ := strconv.ParseFloat(a, 64)
	fb, _ := strconv.ParseFloat(b, 64)
	return fa > fb
}

// TS is t as a Slack timestamp, for comparing with the fake's.
func TS(t time.Time) string { return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000) }
