package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
)

// srvPy serves the workspace on 127.0.0.1:<argv[1]> and logs the Cookie
// header of every request to cookies.log: a person's agent running a dev
// server, or an attacker's waiting for the operator's browser.
const srvPy = `cat > srv.py <<'EOF'
import http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):
        open('cookies.log', 'a').write('cookie=%s\n' % self.headers.get('Cookie'))
        super().do_GET()
http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
EOF
echo ok`

// A person's home has a network of its own. Each of these worked before
// homes: A's server on 127.0.0.1 answered B's agent with A's files; the
// operator's browser, opening a page an agent served on 127.0.0.1, sent it
// the web chat's cookies (scoped by host, not port); an agent reached the
// web chat itself (and opened sessions on it until the operator was locked
// out).
func TestHomeNetworkAttacks(t *testing.T) {
	eachRunner(t, homeNetworkAttacks)
}

// eachRunner runs f with textslash serve started by start as root, and as
// a normal user (the tests' agent user, which a runner that is not root
// runs agents as: its own). Homes hold either way; before, a textslash
// that was not root had none ("homes off"): every run shared the host's
// network.
func eachRunner(t *testing.T, f func(t *testing.T, start func(env ...string) *instance)) {
	t.Run("root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root")
		}
		f(t, func(env ...string) *instance { return startServe(t, env...) })
	})
	t.Run("normal user", func(t *testing.T) {
		u := claudetest.AgentUser(t)
		if u == "" {
			t.Skip("needs root, to run textslash as a normal user")
		}
		f(t, func(env ...string) *instance {
			inst := startServeAs(t, u, env...)
			for _, said := range []string{"homes kept", "homes have a network of their own"} {
				if len(logLines(t, inst, said)) == 0 {
					t.Fatalf("textslash as %s did not log %q (its log follows)", u, said)
				}
			}
			return inst
		})
	})
}

func homeNetworkAttacks(t *testing.T, start func(env ...string) *instance) {
	tab := browser(t, 120*time.Second) // first: skips without Chromium
	inst := start("TEXTSLASH_AGENT=shell")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := inst.newChat(t), inst.newChat(t)
	aEvents, bEvents := a.events(ctx), b.events(ctx)
	port := freePort(t)
	if got := a.reply(aEvents, srvPy+" && echo secret-of-a > secretA.txt", 30*time.Second); got != "ok" {
		t.Fatalf("A's setup: %q", got)
	}
	aID := a.send(fmt.Sprintf("python3 srv.py %s >/dev/null 2>&1 & sleep 12; cat cookies.log 2>/dev/null; echo served", port))
	waitFor(t, aEvents, 10*time.Second, func(ev sseEvent) bool { return ev.Kind == "started" && ev.Event.JobID == aID })
	time.Sleep(time.Second) // the server starts

	fetch := fmt.Sprintf("curl -s --max-time 3 http://127.0.0.1:%s/secretA.txt || echo unreachable", port)
	if got := b.reply(bEvents, fetch, 30*time.Second); strings.Contains(got, "secret-of-a") || !strings.Contains(got, "unreachable") {
		t.Errorf("B's agent fetched A's server on 127.0.0.1:%s: %q; want it unreachable", port, got)
	}

	// The operator's browser has the web chat's cookies, then opens the
	// agent's page.
	if err := chromedp.Do(tab, chromedp.Navigate(inst.URL+"/"), chromedp.WaitVisible(chromedp.ID("input"))); err != nil {
		t.Fatalf("open the web chat: %v", err)
	}
	err := chromedp.Do(tab, chromedp.Navigate("http://127.0.0.1:"+port+"/secretA.txt"))
	body, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err == nil && strings.Contains(body, "secret-of-a") {
		t.Errorf("the operator's browser reached A's server on the host's 127.0.0.1:%s", port)
	}
	served := waitFor(t, aEvents, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == aID }).Event.Text
	if strings.Contains(served, "ts_") {
		t.Errorf("A's server got the web chat's cookies:\n%s", served)
	}

	// The web chat, from inside a home: no page, no session.
	flood := fmt.Sprintf(`for i in $(seq 25); do curl -s -o /dev/null -w '%%{http_code} ' --max-time 2 %s/; done; echo`, inst.URL)
	if got := b.reply(bEvents, flood, 90*time.Second); strings.Trim(strings.ReplaceAll(got, "000", ""), " \n") != "" {
		t.Errorf("B's agent reached the web chat at %s: %q; want every request refused (000)", inst.URL, got)
	}
	op := inst.newChat(t) // fails the test when the operator is locked out
	if got := op.reply(op.events(ctx), "echo operator-in", 30*time.Second); got != "operator-in" {
		t.Errorf("the operator after the flood: %q", got)
	}
}

// A screenshot of localhost is of the person's own dev server, in their
// home: the browser reaches into that person's network and no other — not
// a server on the host's loopback, not another person's.
func TestHomeShotOfOwnServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("homes need root")
	}
	hostApp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><body style="background:#a26"><h1>host app</h1>`)
	}))
	defer hostApp.Close()
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_CHROMIUM="+shottest.Chromium(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := inst.newChat(t)
	events := a.events(ctx)
	port := freePort(t)
	own := fmt.Sprintf(`mkdir -p site && echo '<body style="background:#2a6"><h1>own app</h1>' > site/index.html && (python3 -m http.server %s --bind 127.0.0.1 -d site >/dev/null 2>&1 &) && sleep 1 && textslash shot http://localhost:%s/ && echo own-shot`, port, port)
	if got := a.reply(events, own, 60*time.Second); !strings.Contains(got, "own-shot") {
		t.Errorf("a shot of the person's own server on localhost:%s: %q; want it taken", port, got)
	}
	host := "textslash shot " + hostApp.URL + " 2>&1; echo exit=$?"
	if got := a.reply(events, host, 60*time.Second); !strings.Contains(got, "exit=1") && !strings.Contains(got, "exit=2") {
		t.Errorf("a shot of a server on the host's loopback (%s): %q; want it refused", hostApp.URL, got)
	}
}

// What a person's sandbox lacks where textslash runs is said in one
// start-up line (why, and what is on), on /metrics (textslash_sandbox)
// and in the person's status. As a normal user here, homes and their
// network are on, and limits (textslash's cgroups are root's) and the disk
// bound (no loop devices) are off. Before, only scattered log lines said
// so, and status said nothing.
//
// And a normal user's homes serve preview links, as a root runner's.
func TestNormalUserSaysWhatIsOff(t *testing.T) {
	u := claudetest.AgentUser(t)
	if u == "" {
		t.Skip("needs root, to run textslash as a normal user")
	}
	inst := startServeAs(t, u, "TEXTSLASH_AGENT=shell", "TEXTSLASH_DISK_QUOTA=1G")
	lines := logLines(t, inst, `"sandbox: `)
	if len(lines) != 1 {
		t.Fatalf("start-up lines about the sandbox: %q; want one", lines)
	}
	for _, want := range []string{"OFF here: ", "limits (", "disk (", "on: homes, network"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the sandbox's start-up line %s; want it to say %q", lines[0], want)
		}
	}
	for part, want := range map[string]float64{"homes": 1, "network": 1, "limits": 0, "disk": 0} {
		if got := counter(t, inst.URL, `textslash_sandbox{part="`+part+`"}`); got != want {
			t.Errorf("textslash_sandbox{part=%q} = %v; want %v", part, got, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := inst.newChat(t)
	events := a.events(ctx)
	if got := a.reply(events, "echo hi", 30*time.Second); got != "hi" {
		t.Fatalf("echo hi: %q", got)
	}
	a.send("status")
	status := notice(t, events, "Idle").Text
	for _, want := range []string{"Sandbox here: ", "no memory, process or CPU limit of your own", "no disk bound of your own"} {
		if !strings.Contains(status, want) {
			t.Errorf("status:\n%s\nwant it to say %q", status, want)
		}
	}
	if strings.Contains(status, "shares this machine's network") || strings.Contains(status, "start cold") {
		t.Errorf("status says homes or their network are off, as a normal user:\n%s", status)
	}
	// A preview of the person's dev server opens through its link, as
	// with a root runner.
	if got := a.reply(events, devPy, 60*time.Second); got != "ok" {
		t.Fatalf("the dev server in the background: %q", got)
	}
	link := linkRE.FindString(a.reply(events, "preview 5173", 30*time.Second))
	if link == "" {
		t.Fatal("preview 5173 gave no link")
	}
	if code, body := getLink(t, link); code != http.StatusOK || !strings.Contains(body, "v1") {
		t.Errorf("the preview link %s: %d %q; want the dev server's page", link, code, body)
	}
}
