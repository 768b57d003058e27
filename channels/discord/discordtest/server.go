// Package discordtest is a fake of Discord for tests: the gateway (a
// websocket speaking HELLO, IDENTIFY, READY, heartbeats and their ACKs,
// RESUME after a drop with the missed events replayed, dispatches of
// MESSAGE_CREATE and INTERACTION_CREATE) and the REST API a bot uses
// (GET /gateway and /gateway/bot, messages sent as JSON or multipart with
// attachments and flags, edited and listed, DM channels opened, interactions
// answered), with per-route rate limits (429 with retry_after and the
// X-RateLimit-* headers) and the CDN serving people's attachments. It is
// written from Discord's developer reference (discord.com/developers/docs:
// topics/gateway, topics/rate-limits, resources/message,
// interactions/receiving-and-responding) and checked against
// bwmarrin/discordgo's client. It records every request.
package discordtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options of the fake.
type Options struct {
	// Token is the bot's token (without "Bot "); default DefaultToken.
	Token string
	// HeartbeatInterval is HELLO's heartbeat_interval; default 41.25 s.
	HeartbeatInterval time.Duration
	// MessageContent: the app has the privileged MESSAGE_CONTENT intent
	// enabled in the portal; without it an IDENTIFY asking for it is
	// closed with 4014 (disallowed intents).
	MessageContent bool
	// Limit and Window are each route bucket's rate limit (per channel
	// for channel routes); default 5 per 5 s, as Discord's message create.
	Limit  int
	Window time.Duration
}

// Server is a running fake of Discord.
type Server struct {
	// URL is the fake's base: it answers for https://discord.com (the
	// API under /api/v{n}/), the gateway (ws) and the CDN.
	URL string
	// Bot is the bot user the token belongs to.
	Bot User
	// AppID is the bot's application id.
	AppID string

	opts Options
	srv  *httptest.Server
	gw   gateway

	mu           sync.Mutex
	requests     []Request
	channels     map[string]*Channel
	dms          map[string]string // user id → DM channel id
	messages     map[string][]*Message
	forbidden    map[string]bool
	files        map[string]File // CDN path → file
	interactions map[string]*interactionState
	limits       map[string]*bucket
	tooMany      map[string][]time.Duration // route → 429s to answer next
	early        int                        // requests before the reset a 429 gave
	hold         func(Message) bool         // the bot's next message to hold, or nil
	held         chan Message
}

// Request is one REST request the fake took.
type Request struct {
	Method string
	// Path is the request's path under /api/v{n}, query left out.
	Path string
	// Route is the path's pattern: "POST /channels/{channel}/messages".
	Route string
	// Body is the JSON body (a multipart request's payload_json).
	Body []byte
	// Files are a multipart request's files, in order.
	Files []File
	// Status is the fake's answer.
	Status int
}

// File is an uploaded or served file.
type File struct {
	Name        string
	ContentType string
	Data        []byte
}

// interactionState is an interaction dispatched and how it was answered.
type interactionState struct {
	interaction Interaction
	responses   []Callback
}

// Callback is an answer to an interaction (POST .../callback).
type Callback struct {
	InteractionID string
	// Type is the interaction callback type: 4 a message, 5 deferred, 6
	// deferred update, 7 the message updated.
	Type int
	Body []byte
}

// New starts a fake of Discord, closed when the test ends.
func New(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Token == "" {
		opts.Token = DefaultToken
	}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = 41250 * time.Millisecond
	}
	if opts.Limit == 0 {
		opts.Limit = 5
	}
	if opts.Window == 0 {
		opts.Window = 5 * time.Second
	}
	now := time.Now()
	s := &Server{
		Bot:   User{ID: snowflake(now), Username: "textslash", Bot: true},
		AppID: snowflake(now), opts: opts,
		channels: map[string]*Channel{}, dms: map[string]string{}, messages: map[string][]*Message{},
		forbidden: map[string]bool{}, files: map[string]File{}, interactions: map[string]*interactionState{},
		limits: map[string]*bucket{}, tooMany: map[string][]time.Duration{},
	}
	s.gw.server = s
	s.srv = httptest.NewServer(s.routes())
	s.URL = s.srv.URL
	t.Cleanup(func() {
		s.gw.closeAll()
		s.srv.Close()
	})
	return s
}

// Token is the bot token the fake takes.
func (s *Server) Token() string { return s.opts.Token }

// Requests are the REST requests taken so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Sent are the requests of route (as Request.Route) answered with a 2xx.
func (s *Server) Sent(route string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Route == route && r.Status < 300 {
			out = append(out, r)
		}
	}
	return out
}

// Messages are the messages of a channel as they stand (edits applied),
// oldest first.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, 0, len(s.messages[channel]))
	for _, m := range s.messages[channel] {
		out = append(out, *m)
	}
	return out
}

// Callbacks are the answers given to interaction id.
func (s *Server) Callbacks(id string) []Callback {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.interactions[id]; st != nil {
		return slices.Clone(st.responses)
	}
	return nil
}

// GuildChannel makes a text channel of guild and returns its id.
func (s *Server) GuildChannel(guild string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := snowflake(time.Now())
	s.channels[id] = &Channel{ID: id, Type: GuildText, GuildID: guild}
	return id
}

// DM is the DM channel of the bot and user, opened if need be.
func (s *Server) DM(user User) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dmLocked(user)
}

func (s *Server) dmLocked(user User) string {
	if id, ok := s.dms[user.ID]; ok {
		return id
	}
	id := snowflake(time.Now())
	s.channels[id] = &Channel{ID: id, Type: DM, Recipients: []User{user}}
	s.dms[user.ID] = id
	return id
}

// Forbid makes the bot unable to send to channel (403, code 50007, as
// for a person who blocked the bot or closed their DMs).
func (s *Server) Forbid(channel string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forbidden[channel] = true
}

// RateLimit makes the next request of route (as Request.Route) answer
// 429 with retry_after, as when its bucket is spent.
func (s *Server) RateLimit(route string, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tooMany[route] = append(s.tooMany[route], retryAfter)
}

// Hold makes the bot's next message that match accepts be stored (and
// listed, and seen on the gateway) but its answer withheld until the bot
// hangs up, as when the bot dies in the middle of the request: then a
// restarted bot finds it sent. The message is sent on the channel
// returned once it is held.
func (s *Server) Hold(match func(Message) bool) <-chan Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.held = match, make(chan Message, 1)
	return s.held
}

// Attach stores a file a person attaches and returns it as an attachment
// whose URL the fake's CDN serves (signed as Discord's are, with ex, is
// and hm; a URL with another hm is refused).
func (s *Server) Attach(channel, name, contentType string, data []byte) Attachment {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := snowflake(time.Now())
	p := "/attachments/" + channel + "/" + id + "/" + name
	s.files[p] = File{Name: name, ContentType: contentType, Data: data}
	url := s.URL + p + "?" + cdnQuery(p)
	return Attachment{ID: id, Filename: name, ContentType: contentType, Size: len(data), URL: url, ProxyURL: url}
}

// cdnQuery is the signature of a CDN path: an expiry a day on (ex), the
// time issued (is) and their hash (hm).
func cdnQuery(p string) string {
	ex := fmt.Sprintf("%x", time.Now().Add(24*time.Hour).Unix())
	sum := sha256.Sum256([]byte(p))
	return "ex=" + ex + "&is=" + ex + "&hm=" + hex.EncodeToString(sum[:8])
}

// cdn serves an attached file.
func (s *Server) cdn(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	f, ok := s.files[r.URL.Path]
	s.mu.Unlock()
	want := cdnQuery(r.URL.Path)
	if !ok || r.URL.Query().Get("hm") != want[strings.LastIndex(want, "=")+1:] {
		http.Error(w, "This content is no longer available.", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", f.ContentType)
	w.Write(f.Data)
}

// DefaultToken is the fake's bot token unless Options.Token says
// otherwise: shaped as Discord's are (three base64url parts).
const DefaultToken = "MTA5ODc2NTQzMjEwOTg3NjU0Mw.GaBcDe.fake-bot-token-for-tests-0123456789"
