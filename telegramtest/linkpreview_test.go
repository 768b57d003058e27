package telegramtest_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/textslash/textslash/telegramtest"
)

// sendMessage records whether the text's link preview is off, asked
// either way the Bot API takes it; options it cannot read are refused.
func TestSendMessageLinkPreview(t *testing.T) {
	api := telegramtest.NewAPI(t)
	for _, tc := range []struct {
		params url.Values
		status int
		off    bool
	}{
		{url.Values{}, http.StatusOK, false},
		{url.Values{"link_preview_options": {`{"is_disabled":true}`}}, http.StatusOK, true},
		{url.Values{"link_preview_options": {`{"prefer_small_media":true}`}}, http.StatusOK, false},
		{url.Values{"disable_web_page_preview": {"true"}}, http.StatusOK, true},
		{url.Values{"link_preview_options": {`{is_disabled}`}}, http.StatusBadRequest, false},
	} {
		tc.params.Set("chat_id", "4242")
		tc.params.Set("text", "https://abc.preview.example.com/")
		before := len(api.Calls())
		resp, err := http.PostForm(api.URL+"/bot"+telegramtest.Token+"/sendMessage", tc.params)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%v: status %d; want %d", tc.params, resp.StatusCode, tc.status)
			continue
		}
		if calls := api.Calls(); tc.status == http.StatusOK && (len(calls) != before+1 || calls[before].NoLinkPreview != tc.off) {
			t.Errorf("%v: calls %+v; want one more with NoLinkPreview %t", tc.params, calls[before:], tc.off)
		}
	}
}
