package telegramtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// sendChatAction takes the Bot API's actions only, and a chat_id; the
// calls taken are recorded apart from the messages.
func TestChatAction(t *testing.T) {
	a := NewAPI(t)
	for _, tt := range []struct {
		name     string
		form     url.Values
		wantCode int
		wantDesc string
	}{
		{"typing", url.Values{"chat_id": {"4242"}, "action": {"typing"}}, http.StatusOK, ""},
		{"upload_photo", url.Values{"chat_id": {"4242"}, "action": {"upload_photo"}}, http.StatusOK, ""},
		{"unknown action", url.Values{"chat_id": {"4242"}, "action": {"dancing"}}, http.StatusBadRequest, "Bad Request: wrong parameter action in request"},
		{"no action", url.Values{"chat_id": {"4242"}}, http.StatusBadRequest, "Bad Request: wrong parameter action in request"},
		{"nothing", url.Values{}, http.StatusBadRequest, "Bad Request: wrong parameter action in request"},
		{"no chat", url.Values{"action": {"typing"}}, http.StatusBadRequest, "Bad Request: chat_id is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(a.URL+"/bot"+Token+"/sendChatAction", "application/x-www-form-urlencoded", strings.NewReader(tt.form.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var r reply
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode || r.Description != tt.wantDesc || r.OK != (tt.wantCode == http.StatusOK) {
				t.Errorf("got %d %+v; want %d %q", resp.StatusCode, r, tt.wantCode, tt.wantDesc)
			}
		})
	}
	got := a.ChatActions()
	if len(got) != 2 || got[0].ChatID != "4242" || got[0].Action != "typing" || got[1].Action != "upload_photo" {
		t.Errorf("chat actions %+v; want typing, then upload_photo, to 4242", got)
	}
	if n := len(a.Calls()); n != 0 || a.Attempts() != 0 {
		t.Errorf("%d calls, %d attempts; want chat actions kept apart", n, a.Attempts())
	}
}
