package ingress_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
)

// Over https the chat's session is a __Host- cookie: the browser keeps it
// to the chat's host (Secure, Path=/, no Domain), and no cookie a page of
// a sibling host sets for the shared domain (a preview app's ts_web) can
// stand in for it. Over plain http (localhost) it keeps its old name.
func TestWebSessionCookieIsTheChatHostsAlone(t *testing.T) {
	ns := natstest.RunJetStream(t)
	sessions, err := contract.NewWebSessions([]byte("a web session key for tests"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := ingress.New(ingress.Config{WebChat: true, Sessions: sessions}, ns.JS, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	chat := in.WebChat()
	open := func(https bool, cookies ...*http.Cookie) *http.Response {
		r := httptest.NewRequest("GET", "http://chat.example.com/", nil)
		if https {
			r.Header.Set("X-Forwarded-Proto", "https")
		}
		for _, c := range cookies {
			r.AddCookie(c)
		}
		w := httptest.NewRecorder()
		chat.ServeHTTP(w, r)
		return w.Result()
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
	tossed, _ := sessions.New()
	if cs := open(true, &http.Cookie{Name: contract.WebSessionCookie, Value: tossed}).Cookies(); len(cs) != 1 || cs[0].Name != "__Host-ts_web" || cs[0].Value == tossed {
		t.Errorf("over https with a tossed ts_web: %v; want a new __Host-ts_web session", cs)
	}
	r := httptest.NewRequest("POST", "http://chat.example.com/api/messages", nil)
	r.Header.Set("X-Forwarded-Proto", "https")
	r.AddCookie(&http.Cookie{Name: contract.WebSessionCookie, Value: tossed})
	w := httptest.NewRecorder()
	chat.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("a message over https with only a tossed ts_web: %d; want 401", w.Code)
	}
}
