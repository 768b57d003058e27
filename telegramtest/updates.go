// Updates a test gives the bot: a person's message (Update) and a button
// press (Callback) on a message the bot sent or AddMessage made, and
// answerCallbackQuery, which answers each press once.

package telegramtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

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
