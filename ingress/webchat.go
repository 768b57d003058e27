package ingress

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

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

//go:embed webui/index.html
var webPage []byte

// webMaxText caps one web chat message.
const webMaxText = 16 << 10

// webPageCSP keeps the page to its own scripts and out of other pages'
// frames.
const webPageCSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// webPage serves the chat page and gives the browser a session (its user
// on the web channel) if it has none: only to the page opened by the
// person (typed, bookmarked, a link followed), never to another page's
// request for it, and, unless the operator asks (Operator), a limited
// number per client address.
func (i *Ingress) webPage(w http.ResponseWriter, r *http.Request) {
	if _, err := i.webUser(r); err != nil && opened(r) {
		ip := clientIP(r)
		if !operator(r) && !i.sessions.allow(ip) {
			i.log.Warn().Str("remote", ip).Msg("web chat session refused: too many new sessions from this address without the token")
			http.Error(w, "textslash: too many new web chat sessions from your address. Open the web chat with ?token= and the token kept in textslash's data directory (web/token), or try again in a minute.", http.StatusTooManyRequests)
			return
		}
		value, u := i.cfg.Sessions.New()
		https := HTTPS(r, i.cfg.PublicURL)
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
		i.log.Info().Str("user", u.Key()).Str("remote", ip).Msg("web chat session started")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", webPageCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(webPage)
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

// webMessage takes {"id": "...", "text": "..."} from the page. The id is the
// client's, so a retried POST is stored once; it is generated when absent.
func (i *Ingress) webMessage(w http.ResponseWriter, r *http.Request) {
	u, err := i.webUser(r)
	if err != nil {
		webError(w, http.StatusUnauthorized, "no web chat session: open / first")
		return
	}
	var body struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, i.cfg.MaxBodyBytes)
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			webError(w, http.StatusRequestEntityTooLarge, "message too large")
			return
		}
		webError(w, http.StatusBadRequest, `body must be JSON: {"text": "..."}`)
		return
	}
	if len(body.Text) > webMaxText {
		webError(w, http.StatusRequestEntityTooLarge, "message too large")
		return
	}
	id, ok := webID(w, body.ID)
	if !ok {
		return
	}
	ctx, log := i.traced(r)
	i.webPublish(ctx, log, w, contract.Inbound{ID: id, User: u, Text: body.Text})
}

// webID is the client's message id, checked, or a new one when it sent
// none; false once the request is answered with an error.
func webID(w http.ResponseWriter, id string) (string, bool) {
	if id == "" {
		return newID(), true
	}
	if _, err := contract.NewUser(contract.ChannelWeb, id); err != nil {
		webError(w, http.StatusBadRequest, "id must be 1-64 letters, digits, - or _")
		return "", false
	}
	return id, true
}

// webPublish stores the page's message and answers 202 with its id.
func (i *Ingress) webPublish(ctx context.Context, log zerolog.Logger, w http.ResponseWriter, in contract.Inbound) {
	if err := i.Publish(ctx, in); err != nil {
		log.Error().Err(err).Str("user", in.User.Key()).Str("job_id", in.ID).Msg("web message not stored")
		webError(w, http.StatusServiceUnavailable, "could not take the message; try again")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]string{"id": in.ID})
}

// webFile takes a file from the page: multipart/form-data with the file
// in "file", and optionally "id" (the client's, as for webMessage), "text"
// (said with it) and "voice" (set: a recording made with the page's
// microphone, to be transcribed). The file goes into the media store at
// once, and the message names it there (contract.StoredMedia).
func (i *Ingress) webFile(w http.ResponseWriter, r *http.Request) {
	u, err := i.webUser(r)
	if err != nil {
		webError(w, http.StatusUnauthorized, "no web chat session: open / first")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, channel.MaxFetchBytes+webMaxText+4<<10)
	f, hdr, err := r.FormFile("file")
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		webError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("file too large: at most %d MB", channel.MaxFetchBytes>>20))
		return
	case err != nil:
		webError(w, http.StatusBadRequest, `body must be multipart/form-data with the file in "file"`)
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, channel.MaxFetchBytes+1))
	if err != nil || len(data) > channel.MaxFetchBytes {
		webError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("file too large: at most %d MB", channel.MaxFetchBytes>>20))
		return
	}
	if len(data) == 0 {
		webError(w, http.StatusBadRequest, "the file is empty")
		return
	}
	text := r.FormValue("text")
	if len(text) > webMaxText {
		webError(w, http.StatusRequestEntityTooLarge, "message too large")
		return
	}
	id, ok := webID(w, r.FormValue("id"))
	if !ok {
		return
	}
	ctx, log := i.traced(r)
	ct := hdr.Header.Get("Content-Type")
	if detected := http.DetectContentType(data); contract.IsImage(detected) || ct == "" || contract.IsImage(ct) {
		ct = detected
	}
	obj, err := i.storeFile(ctx, ct, hdr.Filename, data)
	if err != nil {
		log.Error().Err(err).Str("user", u.Key()).Msg("web file not stored")
		webError(w, http.StatusServiceUnavailable, "could not take the file; try again")
		return
	}
	m := contract.Media{URL: contract.StoredMedia + obj.ID, ContentType: obj.ContentType, Name: obj.Name}
	m.Voice = r.FormValue("voice") != "" && strings.HasPrefix(ct, "audio/")
	i.webPublish(ctx, log, w, contract.Inbound{ID: id, User: u, Text: text, Media: []contract.Media{m}})
}

// storeFile puts a file a person sent into the media store.
func (i *Ingress) storeFile(ctx context.Context, contentType, name string, data []byte) (contract.Image, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	store, err := i.js.ObjectStore(ctx, contract.BucketMedia)
	if err != nil {
		return contract.Image{}, err
	}
	return bus.PutFile(ctx, store, contentType, name, data)
}

// webUser is the web chat user of a request's session cookie: over https
// the __Host- one alone, which no other host can have set.
func (i *Ingress) webUser(r *http.Request) (contract.User, error) {
	c, err := r.Cookie(contract.WebSessionCookieName(HTTPS(r, i.cfg.PublicURL)))
	if err != nil {
		return contract.User{}, err
	}
	return i.cfg.Sessions.User(c.Value)
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
	return HostName(r.Host) == HostName(u.Host)
}

func webError(w http.ResponseWriter, status int, msg string) {
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
