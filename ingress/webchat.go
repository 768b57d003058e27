package ingress

import (
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/textslash/textslash/contract"
)

//go:embed webui/index.html
var webPage []byte

// webMaxText caps one web chat message.
const webMaxText = 16 << 10

// webPage serves the chat page and gives the browser a session (its user
// id on the web channel) if it has none.
func (i *Ingress) webPage(w http.ResponseWriter, r *http.Request) {
	if _, err := webUser(r); err != nil {
		http.SetCookie(w, &http.Cookie{
			Name:     contract.WebSessionCookie,
			Value:    newID(),
			Path:     "/",
			HttpOnly: true,
			SameSite: http.SameSiteStrictMode,
			MaxAge:   365 * 24 * 3600,
		})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'")
	_, _ = w.Write(webPage)
}

// webMessage takes {"id": "...", "text": "..."} from the page. The id is the
// client's, so a retried POST is stored once; it is generated when absent.
func (i *Ingress) webMessage(w http.ResponseWriter, r *http.Request) {
	u, err := webUser(r)
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
	if body.ID == "" {
		body.ID = newID()
	} else if _, err := contract.NewUser(contract.ChannelWeb, body.ID); err != nil {
		webError(w, http.StatusBadRequest, "id must be 1-64 letters, digits, - or _")
		return
	}
	in := contract.Inbound{ID: body.ID, User: u, Text: body.Text}
	ctx, log := i.traced(r)
	if err := i.Publish(ctx, in); err != nil {
		log.Error().Err(err).Str("user", u.Key()).Str("job_id", in.ID).Msg("web message not stored")
		webError(w, http.StatusServiceUnavailable, "could not take the message; try again")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]string{"id": in.ID})
}

// webUser is the web chat user of a request's session cookie.
func webUser(r *http.Request) (contract.User, error) {
	c, err := r.Cookie(contract.WebSessionCookie)
	if err != nil {
		return contract.User{}, err
	}
	return contract.NewUser(contract.ChannelWeb, c.Value)
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
