package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
)

// devPy is a small dev server with a WebSocket reload channel, started
// with textslash background on port 5173 of the person's home: its page
// shows msg.txt and takes each change of it over the WebSocket; every
// request's Host and Cookie go to requests.log.
const devPy = `cat > dev.py <<'EOF'
import base64, hashlib, http.server, os, socketserver, sys, time
PAGE = """<!doctype html><title>app</title><h1 id=msg>MSG</h1><script>
const ws = new WebSocket((location.protocol == 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
ws.onopen = () => { document.title = 'connected'; };
ws.onmessage = (e) => { document.getElementById('msg').textContent = e.data; };
</script>"""
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
    def do_GET(self):
        open('requests.log', 'a').write('host=%s cookie=%s\n' % (self.headers.get('Host'), self.headers.get('Cookie')))
        if self.path == '/ws':
            acc = base64.b64encode(hashlib.sha1((self.headers['Sec-WebSocket-Key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').encode()).digest()).decode()
            self.send_response(101); self.send_header('Upgrade', 'websocket'); self.send_header('Connection', 'Upgrade')
            self.send_header('Sec-WebSocket-Accept', acc); self.end_headers(); self.wfile.flush()
            last = os.path.getmtime('msg.txt')
            while True:
                time.sleep(0.1)
                if os.path.getmtime('msg.txt') != last:
                    last = os.path.getmtime('msg.txt')
                    data = open('msg.txt').read().strip().encode()
                    self.wfile.write(bytes([0x81, len(data)]) + data); self.wfile.flush()
        body = PAGE.replace('MSG', open('msg.txt').read().strip()).encode()
        self.send_response(200); self.send_header('Content-Type', 'text/html'); self.send_header('Content-Length', str(len(body)))
        self.end_headers(); self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
S(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
EOF
echo v1 > msg.txt && textslash background python3 dev.py 5173 >/dev/null 2>&1 && for i in $(seq 100); do curl -s -o /dev/null localhost:5173/ && break; sleep 0.1; done && echo ok`

var linkRE = regexp.MustCompile(`http://[a-z0-9]+\.preview\.localhost:[0-9]+/`)

// getLink GETs link (its host resolved to loopback, as browsers do) and
// returns the status and body.
func getLink(t *testing.T, link string) (int, string) {
	t.Helper()
	u, _ := url.Parse(link)
	req, _ := http.NewRequest("GET", "http://127.0.0.1:"+u.Port()+"/", nil)
	req.Host = u.Host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// A person's dev server, handed to their home with textslash background,
// opens on a phone through the link preview <port> gives: the page loads,
// a change reaches it over its WebSocket, the app sees no textslash
// cookie, the page cannot post to the chat, and the link stops working
// after preview off and after its TTL. Another person's link to the same
// port opens nothing of this person's, and says nothing listens.
func TestPreviewOfDevServerInBrowser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("homes need root")
	}
	tab := browser(t, 4*time.Minute) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_CHROMIUM="+shottest.Chromium(t), "TEXTSLASH_PREVIEW_TTL=40s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := inst.newChat(t), inst.newChat(t)
	aEvents, bEvents := a.events(ctx), b.events(ctx)
	if got := a.reply(aEvents, devPy, 60*time.Second); got != "ok" {
		t.Fatalf("the dev server in the background: %q", got)
	}
	reply := a.reply(aEvents, "preview 5173", 60*time.Second)
	link := linkRE.FindString(reply)
	if link == "" {
		t.Fatalf("preview 5173: %q; want a link", reply)
	}
	// status: what the home keeps running, and for how long.
	a.send("status")
	if got := waitFor(t, aEvents, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "notice" && strings.HasPrefix(ev.Event.Text, "Idle") }).Event.Text; !regexp.MustCompile(`In the background: [0-9a-f]{4} python3 dev\.py 5173, for \d+s \(stop [0-9a-f]{4} ends it\)\.`).MatchString(got) {
		t.Errorf("status:\n%s\nwant the dev server in the background and for how long", got)
	}

	// The operator's browser has the web chat's cookies, at phone size.
	if err := chromedp.Do(tab, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
		chromedp.Navigate(inst.URL+"/"), chromedp.WaitVisible(chromedp.ID("input"))); err != nil {
		t.Fatalf("open the web chat: %v", err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(link)); err != nil {
		t.Fatalf("open %s: %v", link, err)
	}
	waitPage(tab, t, `(want) => document.title === want && document.getElementById('msg').textContent === 'v1'`, "connected", "the app's page, its WebSocket open")
	if got := a.reply(aEvents, "echo v2 > msg.txt && echo changed", 30*time.Second); got != "changed" {
		t.Fatalf("the change: %q", got)
	}
	waitPage(tab, t, `(want) => document.getElementById('msg').textContent === want`, "v2", "the change over the WebSocket")

	// A script of the page posts to the chat with the browser's cookies.
	refusals := func() int {
		logs, _ := os.ReadFile(inst.Log)
		return strings.Count(string(logs), "web chat request from another origin refused")
	}
	before := refusals()
	post := fmt.Sprintf(`fetch(%q, {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': 'text/plain'},
		body: JSON.stringify({text: 'echo pwned-by-preview'})}).finally(() => { document.title = 'posted'; }); 'ok'`, inst.URL+"/api/messages")
	if _, err := chromedp.Run(tab, chromedp.Evaluate[string](post)); err != nil {
		t.Fatalf("the page's post: %v", err)
	}
	waitPage(tab, t, `(want) => document.title === want`, "posted", "the page's post made")
	natstest.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if refusals() <= before {
			return fmt.Errorf("the chat did not refuse the preview page's post")
		}
		return nil
	})

	if got := a.reply(aEvents, "cat requests.log", 30*time.Second); strings.Contains(got, "ts_") || !strings.Contains(got, "host=localhost:5173") {
		t.Errorf("what the app saw:\n%s\nwant Host localhost:5173 and no ts_ cookie", got)
	}

	// B's link to the same port: B's home, where nothing listens.
	if got := b.reply(bEvents, "echo b-home", 30*time.Second); got != "b-home" {
		t.Fatalf("B's first run: %q", got)
	}
	bReply := b.reply(bEvents, "preview 5173", 60*time.Second)
	bLink := linkRE.FindString(bReply)
	if bLink == "" || bLink == link {
		t.Fatalf("B's preview 5173: %q", bReply)
	}
	if code, body := getLink(t, bLink); code != http.StatusBadGateway || strings.Contains(body, "v2") || !strings.Contains(body, "Nothing listens on port 5173") {
		t.Errorf("B's link: %d %q; want nothing listening, none of A's app", code, body)
	}

	// preview off: the link ends, and the server.
	if got := a.reply(aEvents, "preview off", 30*time.Second); !strings.Contains(got, "1 link ended, 1 background process stopped") {
		t.Errorf("preview off: %q", got)
	}
	if code, body := getLink(t, link); code != http.StatusGone || !strings.Contains(body, "turned off") {
		t.Errorf("the link after preview off: %d %q", code, body)
	}

	// A new server and link (preview alone: the one port listening), until its TTL.
	restart := "textslash background python3 dev.py 5173 >/dev/null 2>&1 && for i in $(seq 100); do curl -s -o /dev/null localhost:5173/ && break; sleep 0.1; done && echo ok"
	if got := a.reply(aEvents, restart, 60*time.Second); got != "ok" {
		t.Fatalf("restart: %q", got)
	}
	link2 := linkRE.FindString(a.reply(aEvents, "preview", 60*time.Second))
	if code, body := getLink(t, link2); code != http.StatusOK || !strings.Contains(body, "v2") {
		t.Fatalf("the new link %q: %d %q", link2, code, body)
	}
	natstest.CheckFor(t, 90*time.Second, 500*time.Millisecond, func() error {
		if code, body := getLink(t, link2); code != http.StatusGone || !strings.Contains(body, "expired") {
			return fmt.Errorf("%d %.80q", code, body)
		}
		return nil
	})
}

// textslash background starts its command where it is run from, with the
// caller's environment: `cd web && textslash background npm run dev` runs
// npm in web. A directory outside the workspace is refused. Before, the
// command ran in the workspace's root whatever the caller's directory.
func TestBackgroundStartsInTheCallersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("homes need root")
	}
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := inst.newChat(t)
	events := a.events(ctx)
	script := `mkdir -p web && cd web && export WHO=caller && textslash background sh -c 'echo "$PWD $WHO" > where.txt' >/dev/null 2>&1 && for i in $(seq 100); do [ -s where.txt ] && break; sleep 0.1; done; cat where.txt 2>/dev/null || cat ../.textslash/background/*.log`
	got := a.reply(events, script, 60*time.Second)
	if !strings.HasSuffix(got, "/web caller") {
		t.Errorf("textslash background run from web, WHO=caller: %q; want its directory web and WHO caller", got)
	}
	if got := a.reply(events, `cd / && textslash background true 2>&1; echo "exit $?"`, 60*time.Second); !strings.Contains(got, "outside your workspace") || !strings.HasSuffix(got, "exit 1") {
		t.Errorf("textslash background run from /: %q; want it refused as outside the workspace", got)
	}
}
