// Package telegramtest is a fake Telegram Bot API for tests: it takes the
// methods textslash calls (sendMessage, editMessageText, sendPhoto,
// sendDocument, sendMediaGroup, editMessageReplyMarkup, answerCallbackQuery,
// sendChatAction, getFile and file downloads), records them, keeps the
// messages sent to check edits against, and fails on request the way
// Telegram does (429 with retry_after, 400, 403).
package telegramtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
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
	// QueryID is the callback query answered (answerCallbackQuery).
	QueryID string
	At      time.Time
}

// Button is a button of an inline keyboard: its text, and the
// callback_data its press sends.
type Button struct {
	Text string `json:"text"`
	Data string `json:"callback_data"`
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

// serveFile serves a file getFile named, at its file_path.
func (a *API) serveFile(w http.ResponseWriter, r *http.Request, path string) {
	a.mu.Lock()
	data, found := a.files[strings.TrimPrefix(path, "photos/")]
	a.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(data)
}

// getFile answers with the file_path of a file the fake holds.
func (a *API) getFile(w http.ResponseWriter, form url.Values) {
	id := form.Get("file_id")
	a.mu.Lock()
	_, found := a.files[id]
	a.mu.Unlock()
	if !found {
		fail(w, http.StatusBadRequest, "Bad Request: invalid file_id")
		return
	}
	write(w, http.StatusOK, reply{OK: true, Result: map[string]any{"file_id": id, "file_unique_id": id, "file_path": "photos/" + id}})
}

// fill completes call from its method's parameters as Telegram reads them;
// for a request Telegram would refuse it returns the status and
// description Telegram answers with (code 0: none).
func (a *API) fill(call *Call, form url.Values, files map[string][]byte, names map[string]string) (code int, desc string) {
	switch call.Method {
	case "sendMessage", "sendPhoto", "sendDocument", "editMessageText", "editMessageReplyMarkup":
		var err error
		if call.Keyboard, err = keyboard(form.Get("reply_markup")); err != nil {
			return http.StatusBadRequest, "Bad Request: " + err.Error()
		}
	}
	var err error
	switch call.Method {
	case "sendMessage", "editMessageText":
		call.Text = form.Get("text")
		if call.Text == "" {
			return http.StatusBadRequest, "Bad Request: message text is empty"
		}
		if len([]rune(call.Text)) > 4096 {
			return http.StatusBadRequest, "Bad Request: message is too long"
		}
	case "editMessageReplyMarkup":
	case "sendPhoto":
		call.Text = form.Get("caption")
		var p string
		p, err = a.photo(form.Get("photo"), files["photo"])
		call.Photos = []string{p}
	case "sendDocument":
		call.Text = form.Get("caption")
		if len([]rune(call.Text)) > captionLimit {
			return http.StatusBadRequest, "Bad Request: message caption is too long"
		}
		err = a.document(call, form.Get("document"), files["document"], names["document"])
	case "sendMediaGroup":
		err = a.mediaGroup(call, form.Get("media"), files)
	default:
		return http.StatusNotFound, "Not Found: method not found"
	}
	if err != nil {
		return http.StatusBadRequest, "Bad Request: " + err.Error()
	}
	return 0, ""
}

// mediaGroup fills call with the photos of an album, given as sendMediaGroup's
// media parameter and the files it attaches.
func (a *API) mediaGroup(call *Call, param string, files map[string][]byte) error {
	var media []struct {
		Type, Media, Caption string
	}
	if err := json.Unmarshal([]byte(param), &media); err != nil || len(media) < 2 || len(media) > 10 {
		return errors.New("media must hold 2 to 10 items")
	}
	for _, m := range media {
		var up []byte
		if name, ok := strings.CutPrefix(m.Media, "attach://"); ok {
			up = files[name]
			if up == nil {
				return errors.New("no file attached as " + name)
			}
		}
		p, err := a.photo(m.Media, up)
		if err != nil {
			return err
		}
		call.Photos = append(call.Photos, p)
		if m.Caption != "" {
			call.Text = m.Caption
		}
	}
	return nil
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

// answer takes answerCallbackQuery: each query made by Callback is
// answered once, with at most 200 characters of text.
func (a *API) answer(w http.ResponseWriter, call Call, form url.Values) {
	call.QueryID, call.Text = form.Get("callback_query_id"), form.Get("text")
	if len([]rune(call.Text)) > 200 {
		fail(w, http.StatusBadRequest, "Bad Request: MESSAGE_TOO_LONG")
		return
	}
	a.mu.Lock()
	answered, made := a.queries[call.QueryID]
	if made && !answered {
		a.queries[call.QueryID] = true
		a.calls = append(a.calls, call)
	}
	a.mu.Unlock()
	if !made || answered {
		fail(w, http.StatusBadRequest, "Bad Request: query is too old and response timeout expired or query ID is invalid")
		return
	}
	a.t.Logf("telegramtest: answerCallbackQuery id=%s text=%q", call.QueryID, call.Text)
	write(w, http.StatusOK, reply{OK: true, Result: true})
}

// keyboard reads a reply_markup as Telegram does. The fake takes inline
// keyboards of callback buttons only.
func keyboard(markup string) ([][]Button, error) {
	if markup == "" {
		return nil, nil
	}
	var m struct {
		InlineKeyboard [][]Button `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(markup), &m); err != nil || m.InlineKeyboard == nil {
		return nil, errors.New("can't parse reply keyboard markup JSON object")
	}
	for _, row := range m.InlineKeyboard {
		for _, b := range row {
			switch {
			case b.Text == "":
				return nil, errors.New("can't parse inline keyboard button: Text must be non-empty")
			case b.Data == "":
				return nil, errors.New("can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard")
			case len(b.Data) > 64:
				return nil, errors.New("BUTTON_DATA_INVALID")
			}
		}
	}
	return m.InlineKeyboard, nil
}

// photo checks one photo as Telegram would: an uploaded file, or a URL it
// can fetch itself (it fetches it, as Telegram does).
func (a *API) photo(ref string, upload []byte) (string, error) {
	if upload != nil {
		if len(upload) == 0 {
			return "", fmt.Errorf("empty upload")
		}
		return fmt.Sprintf("upload:%d bytes", len(upload)), nil
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("wrong remote file identifier %q", ref)
	}
	resp, err := http.Get(ref)
	if err != nil {
		return "", fmt.Errorf("failed to get HTTP URL content: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("failed to get HTTP URL content: %s", resp.Status)
	}
	return ref, nil
}

// Telegram's limits the fake keeps: captions, uploads (50 MB), files
// Telegram fetches by URL (20 MB, and for sendDocument GIF, PDF and ZIP
// only).
const (
	captionLimit = 1024
	uploadLimit  = 50 << 20
	urlLimit     = 20 << 20
)

// urlDocuments are the types sendDocument takes by URL.
var urlDocuments = []string{"image/gif", "application/pdf", "application/zip"}

// document checks a sendDocument's document as Telegram would, and records
// it in c: an upload of any type, or a URL of a GIF, PDF or ZIP file that
// it fetches.
func (a *API) document(c *Call, ref string, upload []byte, name string) error {
	if upload != nil {
		switch {
		case len(upload) == 0:
			return errors.New("file must be non-empty")
		case len(upload) > uploadLimit:
			return errors.New("file is too big")
		}
		c.Documents, c.DocumentName, c.DocumentData = []string{fmt.Sprintf("upload:%d bytes", len(upload))}, name, upload
		return nil
	}
	if ref == "" {
		return errors.New("there is no document in the request")
	}
	u, err := url.Parse(ref)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("wrong remote file identifier %q", ref)
	}
	resp, err := http.Get(ref)
	if err != nil {
		return fmt.Errorf("failed to get HTTP URL content: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("failed to get HTTP URL content: %s", resp.Status)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if !slices.Contains(urlDocuments, ct) {
		return errors.New("wrong type of the web page content")
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, urlLimit+1))
	if err != nil || len(data) > urlLimit {
		return errors.New("failed to get HTTP URL content")
	}
	c.Documents, c.DocumentName, c.DocumentData = []string{ref}, path.Base(u.Path), data
	return nil
}

// parse reads a method call's parameters: a query string, a form, a
// multipart form (its files, and their file names, by field name) or a
// JSON object.
func parse(r *http.Request) (url.Values, map[string][]byte, map[string]string, error) {
	files, names := map[string][]byte{}, map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		r.Body = http.MaxBytesReader(nil, r.Body, uploadLimit+1<<20)
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return nil, nil, nil, err
		}
		for name, fhs := range r.MultipartForm.File {
			f, err := fhs[0].Open()
			if err != nil {
				return nil, nil, nil, err
			}
			data, _ := io.ReadAll(f)
			f.Close()
			files[name], names[name] = data, fhs[0].Filename
		}
		return r.Form, files, names, nil
	case "application/json":
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, nil, nil, err
		}
		v := url.Values{}
		for k, x := range m {
			switch x := x.(type) {
			case string:
				v.Set(k, x)
			default:
				b, _ := json.Marshal(x)
				v.Set(k, string(b))
			}
		}
		return v, files, names, nil
	default:
		return r.Form, files, names, r.ParseForm()
	}
}

func prefix(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Update is the JSON of a Telegram update with a message from chat (a
// private chat: the chat id is the person's id) with text and, when
// fileID is not empty, a photo.
func Update(updateID int, chat int64, text, fileID string) []byte {
	msg := map[string]any{
		"message_id": updateID, "date": time.Now().Unix(),
		"chat": map[string]any{"id": chat, "type": "private"},
		"from": map[string]any{"id": chat, "is_bot": false, "first_name": "Test"},
	}
	if fileID != "" {
		msg["photo"] = []any{
			map[string]any{"file_id": fileID + "-small", "file_unique_id": "s", "width": 90, "height": 90},
			map[string]any{"file_id": fileID, "file_unique_id": "l", "width": 800, "height": 600},
		}
		if text != "" {
			msg["caption"] = text
		}
	} else {
		msg["text"] = text
	}
	b, _ := json.Marshal(map[string]any{"update_id": updateID, "message": msg})
	return b
}

// AddMessage makes a text message the bot sent to chat before the test,
// with an inline keyboard (nil: none), for callbacks and edits to refer
// to; it returns the message's id.
func (a *API) AddMessage(chat int64, text string, keyboard [][]Button) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nextID++
	a.messages[messageKey(strconv.FormatInt(chat, 10), a.nextID)] = message{text: text, keyboard: keyboard}
	return a.nextID
}

// Callback is the JSON of an update with a callback query: the person in
// private chat pressed the button with data under the bot's message id, as
// the chat shows it now. Each call makes a new query, which
// answerCallbackQuery takes once.
func (a *API) Callback(updateID int, chat int64, id int, data string) []byte {
	a.mu.Lock()
	m, ok := a.messages[messageKey(strconv.FormatInt(chat, 10), id)]
	query := strconv.Itoa(7_000_000_000 + len(a.queries))
	a.queries[query] = false
	a.mu.Unlock()
	if !ok {
		a.t.Fatalf("telegramtest: callback on message %d of chat %d, which the bot never sent", id, chat)
	}
	msg := map[string]any{
		"message_id": id, "date": time.Now().Unix(),
		"chat": map[string]any{"id": chat, "type": "private"},
		"from": map[string]any{"id": 123456, "is_bot": true, "first_name": "textslash"},
	}
	if m.document {
		msg["document"] = map[string]any{"file_id": "sent", "file_unique_id": "sent"}
		msg["caption"] = m.text
	} else if m.photo {
		msg["photo"] = []any{map[string]any{"file_id": "sent", "file_unique_id": "sent", "width": 800, "height": 600}}
		msg["caption"] = m.text
	} else {
		msg["text"] = m.text
	}
	if m.keyboard != nil {
		msg["reply_markup"] = map[string]any{"inline_keyboard": m.keyboard}
	}
	b, _ := json.Marshal(map[string]any{"update_id": updateID, "callback_query": map[string]any{
		"id": query, "from": map[string]any{"id": chat, "is_bot": false, "first_name": "Test"},
		"message": msg, "chat_instance": "-4242", "data": data,
	}})
	return b
}
