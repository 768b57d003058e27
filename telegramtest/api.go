// Package telegramtest is a fake Telegram Bot API for tests: it takes the
// methods textslash calls (sendMessage, editMessageText, sendPhoto,
// sendDocument, sendMediaGroup, editMessageReplyMarkup, answerCallbackQuery,
// sendChatAction, getFile and file downloads), records them (link
// previews asked off too), hands out updates by long polling (getUpdates,
// with setWebhook and deleteWebhook: poll.go), keeps the
// messages sent to check edits against, and fails on request the way
// Telegram does (429 with retry_after, 400, 403).
package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
)

// Token is the bot token the fake accepts.
const Token = "123456:TEST-token_for-textslash"

// Call is one accepted method call.
type Call struct {
	Method    string
	ChatID    string
	MessageID int    // the message sent, or the one edited
	Text      string // text, or the caption
	// Photos are the photos sent: a URL, or "upload:<n bytes>" for an
	// uploaded file.
	Photos []string
	// Documents are the documents sent (sendDocument): a URL, or
	// "upload:<n bytes>"; DocumentName is its file name (the upload's, or
	// the URL's last path element) and DocumentData its bytes.
	Documents    []string
	DocumentName string
	DocumentData []byte
	// Keyboard is the inline keyboard sent or set (reply_markup), by rows.
	Keyboard [][]Button
	// NoLinkPreview: the text is shown without a preview of its links
	// (sendMessage and editMessageText with link_preview_options'
	// is_disabled, or the older disable_web_page_preview); without it,
	// Telegram fetches the first link to show one.
	NoLinkPreview bool
	// QueryID is the callback query answered (answerCallbackQuery).
	QueryID string
	At      time.Time
}

// Button is a button of an inline keyboard: its text, and the
// callback_data its press sends.
type Button struct {
	Text string `json:"text"`
	Data string `json:"callback_data,omitempty"`
	URL  string `json:"url,omitempty"` // a button that opens a link instead
}

// message is what a chat shows of a message the bot sent.
type message struct {
	text     string // text, or the caption
	photo    bool   // a photo, or a document: the text is a caption
	document bool
	keyboard [][]Button
}

func (m message) same(o message) bool {
	return m.text == o.text && m.photo == o.photo && m.document == o.document && slices.EqualFunc(m.keyboard, o.keyboard, slices.Equal[[]Button])
}

type failure struct {
	code       int
	retryAfter int
	desc       string
}

// API is the fake server.
type API struct {
	URL string // base URL, for TEXTSLASH_TELEGRAM_API_URL
	t   testing.TB

	mu       sync.Mutex
	calls    []Call
	attempts int
	failNext []failure
	nextID   int
	files    map[string][]byte  // by file_id
	messages map[string]message // by chat id and message id, "<chat>:<id>"
	queries  map[string]bool    // callback queries made, true once answered

	actions     []ChatAction // sendChatAction calls taken, apart from calls
	failActions []failure

	// Receiving updates (poll.go).
	pending                   []pending // updates not yet confirmed
	arrived                   chan struct{}
	waiting                   *waiter // the getUpdates waiting, if any
	webhookURL, webhookSecret string
	updateCalls               []UpdateCall
}

// NewAPI starts the fake; it stops with the test.
func NewAPI(t testing.TB) *API {
	a := &API{t: t, nextID: 100, files: map[string][]byte{}, messages: map[string]message{}, queries: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	return a
}

// AddFile makes a file available to getFile and the download URL.
func (a *API) AddFile(id string, data []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.files[id] = data
}

// FailNext makes the next n method calls fail with the HTTP status code
// (429 carries retry_after seconds).
func (a *API) FailNext(n, code, retryAfter int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for range n {
		a.failNext = append(a.failNext, failure{code: code, retryAfter: retryAfter, desc: http.StatusText(code)})
	}
}

// Calls returns the accepted calls so far, in order.
func (a *API) Calls() []Call {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Call(nil), a.calls...)
}

// Attempts counts method calls, refused ones included.
func (a *API) Attempts() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts
}

// WaitCalls waits until at least n calls were accepted and returns them.
func (a *API) WaitCalls(t testing.TB, n int, timeout time.Duration) []Call {
	t.Helper()
	var calls []Call
	natstest.CheckFor(t, timeout, 5*time.Millisecond, func() error {
		if calls = a.Calls(); len(calls) < n {
			return fmt.Errorf("telegramtest: %d calls; want %d: %+v", len(calls), n, calls)
		}
		return nil
	})
	return calls
}

type reply struct {
	OK          bool   `json:"ok"`
	Result      any    `json:"result,omitempty"`
	ErrorCode   int    `json:"error_code,omitempty"`
	Description string `json:"description,omitempty"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after,omitempty"`
	} `json:"parameters,omitempty"`
}

func write(w http.ResponseWriter, code int, r reply) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(r)
}

func fail(w http.ResponseWriter, code int, desc string) {
	write(w, code, reply{ErrorCode: code, Description: desc})
}

// refuse answers a call with a failure asked for (FailNext,
// FailChatActions); a 429 carries its retry_after.
func (a *API) refuse(w http.ResponseWriter, method string, f failure) {
	rep := reply{ErrorCode: f.code, Description: f.desc}
	if f.code == http.StatusTooManyRequests {
		rep.Description = fmt.Sprintf("Too Many Requests: retry after %d", f.retryAfter)
		rep.Parameters = &struct {
			RetryAfter int `json:"retry_after,omitempty"`
		}{f.retryAfter}
	}
	a.t.Logf("telegramtest: %s refused: %d", method, f.code)
	write(w, f.code, rep)
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+Token+"/"); ok {
		a.serveFile(w, r, rest)
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+Token+"/")
	if !ok {
		fail(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	form, files, names, err := parse(r)
	if err != nil {
		fail(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	if method == "sendChatAction" {
		a.chatAction(w, form)
		return
	}
	if a.updateMethod(w, r, method, form) {
		return
	}
	a.mu.Lock()
	a.attempts++
	if len(a.failNext) > 0 {
		f := a.failNext[0]
		a.failNext = a.failNext[1:]
		a.mu.Unlock()
		a.refuse(w, method, f)
		return
	}
	a.mu.Unlock()
	call := Call{Method: method, ChatID: form.Get("chat_id"), At: time.Now()}
	switch {
	case method == "answerCallbackQuery":
		a.answer(w, call, form)
		return
	case method == "getFile":
		a.getFile(w, form)
		return
	case call.ChatID == "":
		fail(w, http.StatusBadRequest, "Bad Request: chat_id is empty")
		return
	}
	if code, desc := a.fill(&call, form, files, names); code != 0 {
		fail(w, code, desc)
		return
	}
	if strings.HasPrefix(method, "edit") {
		call.MessageID, _ = strconv.Atoi(form.Get("message_id"))
	}
	a.mu.Lock()
	refused := a.record(&call)
	a.mu.Unlock()
	if refused != "" {
		fail(w, http.StatusBadRequest, "Bad Request: "+refused)
		return
	}
	a.sent(w, call)
}

// sent logs an accepted call and answers with the message it sent.
func (a *API) sent(w http.ResponseWriter, call Call) {
	a.t.Logf("telegramtest: %s chat=%s id=%d text=%q photos=%q documents=%q keyboard=%v", call.Method, call.ChatID, call.MessageID, prefix(call.Text, 40), call.Photos, call.Documents, call.Keyboard)
	chat, _ := strconv.ParseInt(call.ChatID, 10, 64)
	msg := map[string]any{"message_id": call.MessageID, "date": time.Now().Unix(), "chat": map[string]any{"id": chat, "type": "private"}}
	var result any = msg
	if call.Method == "sendMediaGroup" {
		result = []any{msg}
	}
	write(w, http.StatusOK, reply{OK: true, Result: result})
}

// record keeps an accepted call and what the chat now shows of the message
// it sends or edits. An edit Telegram would refuse is not kept: record
// returns Telegram's description of why.
func (a *API) record(c *Call) (refused string) {
	m := message{text: c.Text, photo: len(c.Photos) > 0 || len(c.Documents) > 0, document: len(c.Documents) > 0, keyboard: c.Keyboard}
	if strings.HasPrefix(c.Method, "edit") {
		old, ok := a.messages[messageKey(c.ChatID, c.MessageID)]
		switch {
		case !ok:
			return "message to edit not found"
		case c.Method == "editMessageReplyMarkup":
			m.text, m.photo, m.document = old.text, old.photo, old.document
		case old.photo:
			return "there is no text in the message to edit"
		}
		if m.same(old) {
			return "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"
		}
	} else {
		a.nextID++
		c.MessageID = a.nextID
	}
	a.messages[messageKey(c.ChatID, c.MessageID)] = m
	a.calls = append(a.calls, *c)
	return ""
}

func messageKey(chat string, id int) string { return chat + ":" + strconv.Itoa(id) }

func prefix(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
