package webchat_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/textslash/textslash/contract"
)

// Over https the chat's session is a __Host- cookie: the browser keeps it
// to the chat's host (Secure, Path=/, no Domain), and no cookie a page of
// a sibling host sets for the shared domain (a preview app's ts_web) can
// stand in for it, for a message or for the event stream. Over plain
// http (localhost) it keeps its old name.
func TestWebSessionCookieIsTheChatHostsAlone(t *testing.T) {
	w := start(t)
	open := func(https bool, cookies ...*http.Cookie) *http.Response {
		r := httptest.NewRequest("GET", "http://chat.example.com/", nil)
		if https {
			r.Header.Set("X-Forwarded-Proto", "https")
		}
		for _, c := range cookies {
			r.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		w.pages.ServeHTTP(rec, r)
		return rec.Result()
	}
	for _, tt := range []struct {
		https  bool
		name   string
		secure bool
	}{{true, "__Host-ts_web", true}, {false, "ts_web", false}} {
		cs := open(tt.https).Cookies()
		if len(cs) != 1 || cs[0].Name != tt.name || cs[0].Secure != tt.secure || cs[0].Path != "/" || cs[0].Domain != "" {
			t.Errorf("https %v: the session cookie %v; want %s, Secure %v, Path=/, no Domain", tt.https, cs, tt.name, tt.secure)
		}
	}

	// A ts_web tossed over https (a valid session: the attacker's own) is
	// not the person's session: they get one of their own.
	tossed, _ := w.sessions.New()
	if cs := open(true, &http.Cookie{Name: contract.WebSessionCookie, Value: tossed}).Cookies(); len(cs) != 1 || cs[0].Name != "__Host-ts_web" || cs[0].Value == tossed {
		t.Errorf("over https with a tossed ts_web: %v; want a new __Host-ts_web session", cs)
	}
	for _, route := range []string{"POST /api/messages", "GET /api/events"} {
		method, path, _ := cut(route)
		r := httptest.NewRequest(method, "http://chat.example.com"+path, nil)
		r.Header.Set("X-Forwarded-Proto", "https")
		r.AddCookie(&http.Cookie{Name: contract.WebSessionCookie, Value: tossed})
		rec := httptest.NewRecorder()
		w.pages.ServeHTTP(rec, r)
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s over https with only a tossed ts_web: %d; want 401", route, rec.Code)
		}
	}
}
