package twiliotest

import (
	"net/http"
	"regexp"
	"time"
)

// TypingCall is a typing indicator the fake was asked to show
// (POST https://messaging.twilio.com/v2/Indicators/Typing.json).
type TypingCall struct {
	MessageID string // the person's message it answers, SM… or MM…
	Channel   string // "whatsapp"
	At        time.Time
}

// messageSidRE is a message's or a media message's SID, which a typing
// indicator takes as messageId.
var messageSidRE = regexp.MustCompile(`^(SM|MM)[0-9a-fA-F]{32}$`)

// Typing returns the typing indicators shown so far, in order.
func (a *API) Typing() []TypingCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]TypingCall(nil), a.typing...)
}

// serveTyping takes a typing indicator as Twilio does: form-encoded
// channel "whatsapp" and messageId, a Twilio message SID; 200 and
// {"success": true}, or 400.
func (a *API) serveTyping(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, 20004, "Method not allowed")
		return
	}
	if !a.authorized(w, r) {
		a.logf("typing: 401")
		return
	}
	_ = r.ParseForm()
	call := TypingCall{MessageID: r.PostForm.Get("messageId"), Channel: r.PostForm.Get("channel"), At: time.Now()}
	msg := ""
	switch {
	case call.Channel != "whatsapp":
		msg = "twiliotest: channel must be whatsapp, the only one with typing indicators"
	case call.MessageID == "":
		msg = "twiliotest: messageId is required for WhatsApp"
	case !messageSidRE.MatchString(call.MessageID):
		msg = "twiliotest: messageId must be a message SID (SM…) or media SID (MM…)"
	}
	if msg != "" {
		a.logf("typing %q on %q: 400", call.MessageID, call.Channel)
		writeError(w, http.StatusBadRequest, CodeInvalidParameter, msg)
		return
	}
	a.mu.Lock()
	a.typing = append(a.typing, call)
	a.mu.Unlock()
	a.logf("typing %s on %s: 200", call.MessageID, call.Channel)
	writeJSON(w, http.StatusOK, map[string]bool{"success": true})
}
