package webchat

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

//go:embed webui/index.html
var pageHTML []byte

// maxText caps one message.
const maxText = 16 << 10

// pageCSP keeps the page to its own scripts and out of other pages'
// frames.
const pageCSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// page serves the chat page and gives the browser a session (its user
// on the web channel) if it has none: only to the page opened by the
// person (typed, bookmarked, a link followed), never to another page's
// request for it, and, unless the operator asks (Operator), a limited
// number per client address.
func (c *WebChat) page(w http.ResponseWriter, r *http.Request) {
	if _, err := c.user(r); err != nil && opened(r) {
		ip := clientIP(r)
		if !operator(r) && !c.sessions.allow(ip) {
			c.log.Warn().Str("remote", ip).Msg("web chat session refused: too many new sessions from this address without the token")
			http.Error(w, "textslash: too many new web chat sessions from your address. Open the web chat with ?token= and the token kept in textslash's data directory (web/token), or try again in a minute.", http.StatusTooManyRequests)
			return
		}
		value, u := c.cfg.Sessions.New()
		https := HTTPS(r, c.cfg.PublicURL)
		http.SetCookie(w, &http.Cookie{
			Name:     contract.WebSessionCookieName(https), // __Host-… over https
			Value:    value,
			Path:     "/",
			HttpOnly: true,
			Secure:   https,
			// Lax: a link followed from elsewhere opens the person's own
			// chat; requests of other pages are refused by origin anyway.
			SameSite: http.SameSiteLaxMode,
			MaxAge:   365 * 24 * 3600,
		})
		c.log.Info().Str("user", u.Key()).Str("remote", ip).Msg("web chat session started")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(pageHTML)
}

// opened reports whether r is the person opening the page rather than
// another page fetching it: the browser says so (Sec-Fetch-Site: none or
// same-origin, or a navigation), or it is no browser at all.
func opened(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "none", "same-origin":
		return true
	}
	return r.Header.Get("Sec-Fetch-Mode") == "navigate"
}

// message takes {"id": "...", "text": "..."} from the page and publishes
// it with h. The id is the
// client's, so a retried POST is stored once; it is generated when absent.
func (c *WebChat) message(w http.ResponseWriter, r *http.Request, h channel.Host) {
	u, err := c.user(r)
	if err != nil {
		fail(w, http.StatusUnauthorized, "no web chat session: open / first")
		return
	}
	var body struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, c.cfg.MaxBodyBytes)
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fail(w, http.StatusRequestEntityTooLarge, "message too large")
			return
		}
		fail(w, http.StatusBadRequest, `body must be JSON: {"text": "..."}`)
		return
	}
	if len(body.Text) > maxText {
		fail(w, http.StatusRequestEntityTooLarge, "message too large")
		return
	}
	id, ok := messageID(w, body.ID)
	if !ok {
		return
	}
	ctx, log := c.traced(r)
	c.publish(ctx, log, w, h, contract.Inbound{ID: id, User: u, Text: body.Text})
}

// messageID is the client's message id, checked, or a new one when it sent
// none; false once the request is answered with an error.
func messageID(w http.ResponseWriter, id string) (string, bool) {
	if id == "" {
		return newID(), true
	}
	if _, err := contract.NewUser(contract.ChannelWeb, id); err != nil {
		fail(w, http.StatusBadRequest, "id must be 1-64 letters, digits, - or _")
		return "", false
	}
	return id, true
}

// publish stores the page's message with h and answers 202 with its id.
func (c *WebChat) publish(ctx context.Context, log zerolog.Logger, w http.ResponseWriter, h channel.Host, in contract.Inbound) {
	if err := h.Publish(ctx, in); err != nil {
		log.Error().Err(err).Str("user", in.User.Key()).Str("job_id", in.ID).Msg("web message not stored")
		fail(w, http.StatusServiceUnavailable, "could not take the message; try again")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]string{"id": in.ID})
}

// file takes a file from the page: multipart/form-data with the file
// in "file", and optionally "id" (the client's, as for message), "text"
// (said with it) and "voice" (set: a recording made with the page's
// microphone, to be transcribed). The file goes into the media store at
// once, and the message names it there (contract.StoredMedia).
func (c *WebChat) file(w http.ResponseWriter, r *http.Request, h channel.Host) {
	u, err := c.user(r)
	if err != nil {
		fail(w, http.StatusUnauthorized, "no web chat session: open / first")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, channel.MaxFetchBytes+maxText+4<<10)
	f, hdr, err := r.FormFile("file")
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("file too large: at most %d MB", channel.MaxFetchBytes>>20))
		return
	case err != nil:
		fail(w, http.StatusBadRequest, `body must be multipart/form-data with the file in "file"`)
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, channel.MaxFetchBytes+1))
	if err != nil || len(data) > channel.MaxFetchBytes {
		fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("file too large: at most %d MB", channel.MaxFetchBytes>>20))
		return
	}
	if len(data) == 0 {
		fail(w, http.StatusBadRequest, "the file is empty")
		return
	}
	text := r.FormValue("text")
	if len(text) > maxText {
		fail(w, http.StatusRequestEntityTooLarge, "message too large")
		return
	}
	id, ok := messageID(w, r.FormValue("id"))
	if !ok {
		return
	}
	ctx, log := c.traced(r)
	ct := hdr.Header.Get("Content-Type")
	if detected := http.DetectContentType(data); contract.IsImage(detected) || ct == "" || contract.IsImage(ct) {
		ct = detected
	}
	obj, err := c.storeFile(ctx, ct, hdr.Filename, data)
	if err != nil {
		log.Error().Err(err).Str("user", u.Key()).Msg("web file not stored")
		fail(w, http.StatusServiceUnavailable, "could not take the file; try again")
		return
	}
	m := contract.Media{URL: contract.StoredMedia + obj.ID, ContentType: obj.ContentType, Name: obj.Name}
	m.Voice = r.FormValue("voice") != "" && strings.HasPrefix(ct, "audio/")
	c.publish(ctx, log, w, h, contract.Inbound{ID: id, User: u, Text: text, Media: []contract.Media{m}})
}

// storeFile puts a file a person sent into the media store.
func (c *WebChat) storeFile(ctx context.Context, contentType, name string, data []byte) (contract.Image, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	store, err := c.js.ObjectStore(ctx, contract.BucketMedia)
	if err != nil {
		return contract.Image{}, err
	}
	return bus.PutFile(ctx, store, contentType, name, data)
}

// user is the person of a request's session cookie: over https the
// __Host- one alone, which no other host can have set.
func (c *WebChat) user(r *http.Request) (contract.User, error) {
	cookie, err := r.Cookie(contract.WebSessionCookieName(HTTPS(r, c.cfg.PublicURL)))
	if err != nil {
		return contract.User{}, err
	}
	return c.cfg.Sessions.User(cookie.Value)
}

// traced starts the journey of a message arriving in request r: its trace
// id (see contract.NewTrace), in the context to publish it under and on
// the log for the lines about it.
func (c *WebChat) traced(r *http.Request) (context.Context, zerolog.Logger) {
	trace := contract.NewTrace(r.Header.Get("traceparent"))
	return contract.WithTrace(r.Context(), trace), bus.TraceLog(c.log, trace)
}

// HTTPS reports whether the browser reached r over https: directly, or
// through a proxy or tunnel that says so, or at publicURL's https host.
func HTTPS(r *http.Request, publicURL string) bool {
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		return true
	}
	u, err := url.Parse(publicURL)
	if err != nil || u.Scheme != "https" {
		return false
	}
	return contract.HostName(r.Host) == contract.HostName(u.Host)
}

func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// newID is 128 random bits in hex: a session or message id.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
