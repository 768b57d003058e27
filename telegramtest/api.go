// Package telegramtest is a fake Telegram Bot API for tests: it takes the
// methods textslash calls (sendMessage, editMessageText, sendPhoto,
// sendMediaGroup, getFile and file downloads), records them, and fails on
// request the way Telegram does (429 with retry_after, 400, 403).
package telegramtest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
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
	At     time.Time
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
	files    map[string][]byte // by file_id
}

// NewAPI starts the fake; it stops with the test.
func NewAPI(t testing.TB) *API {
	a := &API{t: t, nextID: 100, files: map[string][]byte{}}
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
	deadline := time.Now().Add(timeout)
	for {
		if c := a.Calls(); len(c) >= n {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("telegramtest: %d calls in %v; want %d: %+v", len(a.Calls()), timeout, n, a.Calls())
		}
		time.Sleep(5 * time.Millisecond)
	}
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

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+Token+"/"); ok {
		a.mu.Lock()
		data, found := a.files[strings.TrimPrefix(rest, "photos/")]
		a.mu.Unlock()
		if !found {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+Token+"/")
	if !ok {
		fail(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	form, files, err := parse(r)
	if err != nil {
		fail(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	a.mu.Lock()
	a.attempts++
	if len(a.failNext) > 0 {
		f := a.failNext[0]
		a.failNext = a.failNext[1:]
		a.mu.Unlock()
		rep := reply{ErrorCode: f.code, Description: f.desc}
		if f.code == http.StatusTooManyRequests {
			rep.Description = fmt.Sprintf("Too Many Requests: retry after %d", f.retryAfter)
			rep.Parameters = &struct {
				RetryAfter int `json:"retry_after,omitempty"`
			}{f.retryAfter}
		}
		a.t.Logf("telegramtest: %s refused: %d", method, f.code)
		write(w, f.code, rep)
		return
	}
	a.mu.Unlock()
	call := Call{Method: method, ChatID: form.Get("chat_id"), At: time.Now()}
	if call.ChatID == "" && method != "getFile" {
		fail(w, http.StatusBadRequest, "Bad Request: chat_id is empty")
		return
	}
	var result any
	switch method {
	case "getFile":
		id := form.Get("file_id")
		a.mu.Lock()
		_, found := a.files[id]
		a.mu.Unlock()
		if !found {
			fail(w, http.StatusBadRequest, "Bad Request: invalid file_id")
			return
		}
		write(w, http.StatusOK, reply{OK: true, Result: map[string]any{"file_id": id, "file_unique_id": id, "file_path": "photos/" + id}})
		return
	case "sendMessage", "editMessageText":
		call.Text = form.Get("text")
		if call.Text == "" {
			fail(w, http.StatusBadRequest, "Bad Request: message text is empty")
			return
		}
		if len([]rune(call.Text)) > 4096 {
			fail(w, http.StatusBadRequest, "Bad Request: message is too long")
			return
		}
		if method == "editMessageText" {
			call.MessageID, _ = strconv.Atoi(form.Get("message_id"))
			if call.MessageID == 0 {
				fail(w, http.StatusBadRequest, "Bad Request: message to edit not found")
				return
			}
			a.mu.Lock()
			same := false
			for _, c := range a.calls {
				if c.MessageID == call.MessageID {
					same = c.Text == call.Text
				}
			}
			a.mu.Unlock()
			if same {
				fail(w, http.StatusBadRequest, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
				return
			}
		}
	case "sendPhoto":
		call.Text = form.Get("caption")
		p, err := a.photo(form.Get("photo"), files["photo"])
		if err != nil {
			fail(w, http.StatusBadRequest, "Bad Request: "+err.Error())
			return
		}
		call.Photos = []string{p}
	case "sendMediaGroup":
		var media []struct {
			Type, Media, Caption string
		}
		if err := json.Unmarshal([]byte(form.Get("media")), &media); err != nil || len(media) < 2 || len(media) > 10 {
			fail(w, http.StatusBadRequest, "Bad Request: media must hold 2 to 10 items")
			return
		}
		for _, m := range media {
			var up []byte
			if name, ok := strings.CutPrefix(m.Media, "attach://"); ok {
				up = files[name]
				if up == nil {
					fail(w, http.StatusBadRequest, "Bad Request: no file attached as "+name)
					return
				}
			}
			p, err := a.photo(m.Media, up)
			if err != nil {
				fail(w, http.StatusBadRequest, "Bad Request: "+err.Error())
				return
			}
			call.Photos = append(call.Photos, p)
			if m.Caption != "" {
				call.Text = m.Caption
			}
		}
	default:
		fail(w, http.StatusNotFound, "Not Found: method not found")
		return
	}
	a.mu.Lock()
	if call.MessageID == 0 {
		a.nextID++
		call.MessageID = a.nextID
	}
	a.calls = append(a.calls, call)
	a.mu.Unlock()
	a.t.Logf("telegramtest: %s chat=%s id=%d text=%q photos=%q", method, call.ChatID, call.MessageID, prefix(call.Text, 40), call.Photos)
	chat, _ := strconv.ParseInt(call.ChatID, 10, 64)
	msg := map[string]any{"message_id": call.MessageID, "date": time.Now().Unix(), "chat": map[string]any{"id": chat, "type": "private"}}
	result = msg
	if method == "sendMediaGroup" {
		result = []any{msg}
	}
	write(w, http.StatusOK, reply{OK: true, Result: result})
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

// parse reads a method call's parameters: a query string, a form, a
// multipart form (its files by field name) or a JSON object.
func parse(r *http.Request) (url.Values, map[string][]byte, error) {
	files := map[string][]byte{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return nil, nil, err
		}
		for name, fhs := range r.MultipartForm.File {
			f, err := fhs[0].Open()
			if err != nil {
				return nil, nil, err
			}
			data, _ := io.ReadAll(f)
			f.Close()
			files[name] = data
		}
		return r.Form, files, nil
	case "application/json":
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, nil, err
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
		return v, files, nil
	default:
		return r.Form, files, r.ParseForm()
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
