package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/textslash/textslash/contract"
)

// request sends method path to inst with the given Host and headers, from
// client (nil: no cookies), and returns the response's status and the
// cookies it set.
func request(t *testing.T, inst *instance, client *http.Client, method, path, host, body string, header ...string) (int, []*http.Cookie) {
	t.Helper()
	req, err := http.NewRequest(method, inst.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := client.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v", method, path, host, err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Cookies()
}

// A DNS-rebinding page reaches 127.0.0.1 under its own name: textslash
// answers nothing for a host it does not serve, and says so in its log.
func TestHostCheck(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	port := envValue(inst.env, "PORT")
	c := inst.newChat(t)
	rebind := "rebind.attacker.example:" + port
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/", ""},
		{"POST", "/api/messages", `{"text":"id"}`},
		{"GET", "/api/events", ""},
		{"GET", "/metrics", ""},
		{"GET", "/readyz", ""},
	} {
		if status, cookies := request(t, inst, c.client, tc.method, tc.path, rebind, tc.body); status != http.StatusForbidden || len(cookies) > 0 {
			t.Errorf("%s %s for host %s: %d, cookies %v; want 403 and none", tc.method, tc.path, rebind, status, cookies)
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "chat.localhost:" + port} {
		if status, _ := request(t, inst, c.client, "GET", "/", host, ""); status != http.StatusOK {
			t.Errorf("GET / for host %s: %d; want 200", host, status)
		}
	}
	logs, _ := os.ReadFile(inst.Log)
	if !strings.Contains(string(logs), "rebind.attacker.example") || !strings.Contains(string(logs), "TEXTSLASH_ALLOWED_HOSTS") {
		t.Errorf("no log line naming the refused host and TEXTSLASH_ALLOWED_HOSTS")
	}

	// A name the operator allows is served, with the token: it is a way in
	// from elsewhere.
	named := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_ALLOWED_HOSTS=chat.example.com", "TEXTSLASH_WEB_TOKEN=s3cret")
	host := "chat.example.com:" + envValue(named.env, "PORT")
	if status, _ := request(t, named, nil, "GET", "/", host, ""); status != http.StatusUnauthorized {
		t.Errorf("GET / for an allowed name without the token: %d; want 401", status)
	}
	if status, _ := request(t, named, nil, "GET", "/?token=s3cret", host, ""); status != http.StatusOK {
		t.Errorf("GET /?token= for an allowed name: %d; want 200", status)
	}
}

// Sessions are the server's: a cookie it never issued is no session, on
// the message endpoint and on the event stream alike.
func TestWebChatForgedSession(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(inst.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: contract.WebSessionCookie, Value: "0123456789abcdef0123456789abcdef"}})
	client := &http.Client{Jar: jar}
	if status, _ := request(t, inst, client, "POST", "/api/messages", "", `{"text":"id"}`); status != http.StatusUnauthorized {
		t.Errorf("POST with a forged session: %d; want 401", status)
	}
	if status, _ := request(t, inst, client, "GET", "/api/events", "", ""); status != http.StatusUnauthorized {
		t.Errorf("events with a forged session: %d; want 401", status)
	}
	// Opening the page replaces the forged cookie with an issued one.
	if status, cookies := request(t, inst, client, "GET", "/", "", ""); status != http.StatusOK || len(cookies) != 1 || cookies[0].Value == "0123456789abcdef0123456789abcdef" {
		t.Errorf("GET / with a forged session: %d, cookies %v; want 200 and a new session", status, cookies)
	}
}

// Another page in the same browser — on another port of localhost (same
// site) or another site — cannot use the person's session: its POSTs and
// its event streams are refused, while the page's own requests work.
func TestWebChatCrossOrigin(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	c := inst.newChat(t)
	post := `{"text":"echo pwned"}`
	for _, tc := range []struct {
		name   string
		header []string
	}{
		{"same-site fetch", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://localhost:8123"}},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://attacker.example"}},
		{"old browser, other origin", []string{"Origin", "http://localhost:8123"}},
	} {
		if status, _ := request(t, inst, c.client, "POST", "/api/messages", "", post, tc.header...); status != http.StatusForbidden {
			t.Errorf("%s: POST %d; want 403", tc.name, status)
		}
		if status, _ := request(t, inst, c.client, "GET", "/api/events", "", "", tc.header...); status != http.StatusForbidden {
			t.Errorf("%s: event stream %d; want 403", tc.name, status)
		}
	}
	// A subresource request from another page gets no new session either.
	if status, cookies := request(t, inst, nil, "GET", "/", "", "", "Sec-Fetch-Site", "same-site", "Sec-Fetch-Mode", "no-cors"); status != http.StatusOK || len(cookies) != 0 {
		t.Errorf("same-site no-cors GET /: %d, cookies %v; want the page and no session", status, cookies)
	}
	if status, _ := request(t, inst, c.client, "POST", "/api/messages", "", `{"text":"echo mine"}`,
		"Sec-Fetch-Site", "same-origin", "Origin", inst.URL); status != http.StatusAccepted {
		t.Errorf("the page's own POST: %d; want 202", status)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := waitFor(t, c.events(ctx), 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	if ev.Event.Text != "mine" {
		t.Errorf("first reply %q; want mine (nothing of the refused POSTs ran)", ev.Event.Text)
	}
}

// Reachable from outside (PUBLIC_URL: a tunnel in front of the loopback
// port), the web chat wants its token, its cookies are Secure, and
// /metrics and /readyz are not served to the public side.
func TestWebChatBehindTunnel(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "PUBLIC_URL=https://tunnel.example.net")
	public := "tunnel.example.net"
	for _, path := range []string{"/", "/api/events"} {
		if status, _ := request(t, inst, nil, "GET", path, public, "", "X-Forwarded-For", "203.0.113.9", "X-Forwarded-Proto", "https"); status != http.StatusUnauthorized {
			t.Errorf("GET %s through the tunnel without the token: %d; want 401", path, status)
		}
	}
	if status, _ := request(t, inst, nil, "POST", "/api/messages", public, `{"text":"id"}`, "X-Forwarded-For", "203.0.113.9"); status != http.StatusUnauthorized {
		t.Errorf("POST through the tunnel without the token: %d; want 401", status)
	}
	for _, path := range []string{"/metrics", "/readyz"} {
		if status, _ := request(t, inst, nil, "GET", path, public, "", "X-Forwarded-For", "203.0.113.9"); status != http.StatusNotFound {
			t.Errorf("GET %s through the tunnel: %d; want 404", path, status)
		}
		// The public name spelt otherwise, without a forwarding header.
		for _, host := range []string{"tunnel.example.net.", "tunnel.example.net:443", "tunnel.example.net:80", "Tunnel.Example.Net.:443"} {
			if status, _ := request(t, inst, nil, "GET", path, host, ""); status != http.StatusNotFound {
				t.Errorf("GET %s with Host %s: %d; want 404", path, host, status)
			}
		}
		if status, _ := request(t, inst, nil, "GET", path, "", ""); status != http.StatusOK {
			t.Errorf("GET %s on loopback: %d; want 200", path, status)
		}
	}
	// The token is in the log line "textslash ready", in the web chat's URL.
	logs, _ := os.ReadFile(inst.Log)
	_, after, ok := strings.Cut(string(logs), "/?token=")
	if !ok {
		t.Fatalf("no ?token= URL in the log")
	}
	token := after[:strings.IndexAny(after, `"& `)]
	// Over https, said by the tunnel or by the public name however spelt.
	for _, tc := range []struct{ host, proto string }{{public, "https"}, {"Tunnel.Example.Net.", ""}} {
		status, cookies := request(t, inst, nil, "GET", "/?token="+token, tc.host, "", "X-Forwarded-Proto", tc.proto)
		if status != http.StatusOK || len(cookies) == 0 {
			t.Fatalf("GET /?token= with Host %s: %d, cookies %v; want 200 and cookies", tc.host, status, cookies)
		}
		for _, ck := range cookies {
			if !ck.Secure || !ck.HttpOnly {
				t.Errorf("Host %s: cookie %s: Secure %v HttpOnly %v; want both over https", tc.host, ck.Name, ck.Secure, ck.HttpOnly)
			}
		}
	}
}

// A client holding the token's cookie is the operator: however many
// sessions it opens through the tunnel (every client's address there is
// the tunnel's), none is refused.
func TestWebChatTokenCookieNotLimited(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "PUBLIC_URL=https://tunnel.example.net")
	_, token, _ := strings.Cut(webChatURL(t, inst), "/?token=")
	for n := range 40 {
		status, cookies := request(t, inst, nil, "GET", "/", "tunnel.example.net", "",
			"X-Forwarded-For", "203.0.113.9", "Cookie", "ts_token="+token)
		if status != http.StatusOK || len(cookies) == 0 {
			t.Fatalf("new session %d with the token's cookie: %d, cookies %v; want 200 and a session", n+1, status, cookies)
		}
	}
}

// The page cannot be framed, and one client cannot make sessions without
// end.
func TestWebChatPageHeadersAndSessionLimit(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	c := inst.newChat(t)
	resp, err := http.Get(inst.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy %q; want frame-ancestors 'none'", csp)
	}
	refused := 0
	for range 200 {
		status, _ := request(t, inst, nil, "GET", "/", "", "")
		if status == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused == 0 {
		t.Errorf("200 new sessions from one client in a row were all issued; want some refused with 429")
	}
	// A session issued before keeps working.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	c.send("echo still here")
	if ev := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" }); ev.Event.Text != "still here" {
		t.Errorf("reply %q; want still here", ev.Event.Text)
	}
}

// Anonymous clients of this machine (an agent's scripts) that use up the
// new sessions of 127.0.0.1 do not lock the operator out: the web chat's
// URL in the log, which needs no token on loopback, with the token kept in
// <data>/web/token, always gets a browser in.
func TestWebChatOperatorNotLockedOut(t *testing.T) {
	ctx := browser(t, 60*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	refused := false
	for range 200 {
		if status, _ := request(t, inst, nil, "GET", "/", "", ""); status == http.StatusTooManyRequests {
			refused = true
			break
		}
	}
	if !refused {
		t.Fatal("200 new anonymous sessions in a row were all issued; want 429 at last")
	}
	url := webChatURL(t, inst)
	if strings.Contains(url, "token=") {
		t.Fatalf("web chat URL in the log %q; want none with a token on loopback, where none is required", url)
	}
	token, err := os.ReadFile(filepath.Join(inst.Data, "web", "token"))
	if err != nil {
		t.Fatal(err)
	}
	url += "?token=" + strings.TrimSpace(string(token))
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	sendInPage(ctx, t, "echo operator-in")
	waitPage(ctx, t, replyHas, "operator-in", "the operator's reply")
	// Still in, opened again without the token: the browser holds its
	// session.
	plain, _, _ := strings.Cut(url, "?")
	if err := chromedp.Do(ctx, chromedp.Navigate(plain)); err != nil {
		t.Fatalf("open %s: %v", plain, err)
	}
	waitPage(ctx, t, replyHas, "operator-in", "the operator's reply after a reload")
	// Anonymous clients stay limited.
	if status, _ := request(t, inst, nil, "GET", "/", "", ""); status != http.StatusTooManyRequests {
		t.Errorf("another anonymous new session: %d; want 429", status)
	}
}

// webChatURL is the web chat's URL as the log line "textslash ready"
// gives it to the operator.
func webChatURL(t *testing.T, inst *instance) string {
	t.Helper()
	logs, err := os.ReadFile(inst.Log)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(logs)) {
		var l struct {
			WebChat string `json:"web_chat"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.WebChat != "" {
			return l.WebChat
		}
	}
	t.Fatal("no web_chat URL in the log")
	return ""
}
