package telegramtest

import (
	"net/http"
	"net/url"
	"slices"
	"time"
)

// ChatAction is a sendChatAction call taken: the action ("typing") the
// chat shows for 5 seconds, or until the bot's next message there.
type ChatAction struct {
	ChatID string
	Action string
	At     time.Time
}

// chatActions are the actions sendChatAction takes
// (https://core.telegram.org/bots/api#sendchataction).
var chatActions = []string{
	"typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
	"upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note",
}

// ChatActions returns the chat actions taken so far, in order. They are
// kept apart from Calls, and FailNext and Attempts leave them out: a
// typing indicator running beside a test's messages changes neither.
func (a *API) ChatActions() []ChatAction {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ChatAction(nil), a.actions...)
}

// FailChatActions makes the next n sendChatAction calls fail with the
// HTTP status code (429 carries retry_after seconds).
func (a *API) FailChatActions(n, code, retryAfter int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for range n {
		a.failActions = append(a.failActions, failure{code: code, retryAfter: retryAfter, desc: http.StatusText(code)})
	}
}

// chatAction takes sendChatAction as Telegram does: an action of the
// Bot API's list (checked first: an empty call is refused for it), a
// chat_id; true, or 400.
func (a *API) chatAction(w http.ResponseWriter, form url.Values) {
	c := ChatAction{ChatID: form.Get("chat_id"), Action: form.Get("action"), At: time.Now()}
	a.mu.Lock()
	if len(a.failActions) > 0 {
		f := a.failActions[0]
		a.failActions = a.failActions[1:]
		a.mu.Unlock()
		a.refuse(w, "sendChatAction", f)
		return
	}
	a.mu.Unlock()
	switch {
	case !slices.Contains(chatActions, c.Action):
		fail(w, http.StatusBadRequest, "Bad Request: wrong parameter action in request")
		return
	case c.ChatID == "":
		fail(w, http.StatusBadRequest, "Bad Request: chat_id is empty")
		return
	}
	a.mu.Lock()
	a.actions = append(a.actions, c)
	a.mu.Unlock()
	a.t.Logf("telegramtest: sendChatAction chat=%s action=%s", c.ChatID, c.Action)
	write(w, http.StatusOK, reply{OK: true, Result: true})
}
