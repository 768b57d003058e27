package main

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/cmd/internal/app"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner"
	"github.com/textslash/textslash/telegramtest"
	"github.com/textslash/textslash/twiliotest"
)

var (
	serviceBins     string // directory of the single-service binaries
	serviceBinsOnce sync.Once
	serviceBinsErr  error
)

// buildServices builds cmd/ingress, cmd/dispatcher, … once per test binary.
func buildServices(t *testing.T) string {
	t.Helper()
	serviceBinsOnce.Do(func() {
		serviceBins = filepath.Join(filepath.Dir(binary), "services")
		args := []string{"build", "-o", serviceBins + "/"}
		for _, s := range app.All {
			args = append(args, "../"+s)
		}
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			serviceBinsErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if serviceBinsErr != nil {
		t.Fatal(serviceBinsErr)
	}
	return serviceBins
}

// startService runs one service's binary as startServe runs textslash.
func startService(t *testing.T, service string, env ...string) *instance {
	t.Helper()
	return startProgram(t, []string{filepath.Join(buildServices(t), service)}, env...)
}

// startServiceAs is startService run as the OS user name, as startServeAs.
func startServiceAs(t *testing.T, service, name string, env ...string) *instance {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Skip(err)
	}
	return startProgramAs(t, []string{filepath.Join(buildServices(t), service)}, u, func(string) []string { return env })
}

// The five services as processes of their own on one NATS server, each as
// its own user of nats.conf: a signed WhatsApp webhook to ingress is
// answered through egress. With the dispatcher and the runner down, ingress
// still takes messages, and they are answered once those two are back; each
// process serves only its own routes, and none is refused anything by NATS.
// servicesEnv is the settings every service run apart shares: WhatsApp
// and SMS through the fake Twilio api, behind the proxy at publicURL.
func servicesEnv(api *twiliotest.API, publicURL string) []string {
	return []string{
		"TEXTSLASH_MEDIA_KEY=a-key-shared-by-media-and-egress",
		"PUBLIC_URL=" + publicURL,
		"TWILIO_ACCOUNT_SID=" + api.AccountSID,
		"TWILIO_AUTH_TOKEN=" + api.AuthToken,
		"TWILIO_PHONE_NUMBER=" + twilioFrom,
		"TEXTSLASH_TWILIO_API_URL=" + api.URL,
		"ALLOWED_PHONE_NUMBERS=" + phoneAlice,
		"TEXTSLASH_AGENT=shell",
	}
}

func TestSeparateServices(t *testing.T) {
	ns := runNATSUsers(t)
	api := twiliotest.NewAPI(t)
	tg := telegramtest.NewAPI(t)
	procs := map[string]*instance{}
	front := frontProxy(t, procs)
	env := servicesEnv(api, front.URL)
	env = append(env, telegramEnv(tg)...)
	for _, s := range app.All {
		e := append(slices.Clone(env), ns.env(s)...)
		switch s {
		case app.Media:
			e = append(e, "TEXTSLASH_MEDIA_KEEP=1") // the next image replaces the last
		}
		procs[s] = startService(t, s, e...)
	}
	// Twilio and Telegram reach the services through the proxy at PUBLIC_URL.
	s := &twilioServe{instance: &instance{URL: front.URL}, api: api}

	first := s.webhook(t, "whatsapp:"+phoneAlice, "echo hi", nil)
	if msgs := api.WaitMessages(t, 1, 20*time.Second); msgs[0].Body != "hi" || msgs[0].To != "whatsapp:"+phoneAlice {
		t.Fatalf("sent %+v; want hi to %s", msgs[0], phoneAlice)
	}

	// The trace id ingress gave the message went from process to process
	// in the messages' headers: each logs it on its lines about it.
	trace := inboundTrace(t, procs[app.Ingress].Log, first)
	for svc, msgs := range map[string][]string{
		app.Dispatcher: {"job published", "state"},
		app.Runner:     {"run started", "run ended"},
		app.Egress:     {"sent"},
	} {
		traceFollows(t, procs[svc].Log, trace, map[string][]string{svc: msgs})
	}

	// An image sent in comes back out: ingress fetches it for the runner
	// into the media store, the runner hands it over as a reply's image,
	// egress links it, media serves the link.
	var png bytes.Buffer
	if err := pngEncode(&png, 5, 4); err != nil {
		t.Fatal(err)
	}
	s.webhook(t, "whatsapp:"+phoneAlice, "mkdir -p tmp/ai_screenshots && cp inbox/* tmp/ai_screenshots/ && echo back", url.Values{
		"NumMedia": {"1"}, "MediaUrl0": {api.AddMedia("image/png", png.Bytes())}, "MediaContentType0": {"image/png"},
	})
	msgs := api.WaitMessages(t, 2, 20*time.Second)
	if msgs[1].Body != "back" || len(msgs[1].MediaURLs) != 1 {
		t.Fatalf("sent %q with media %q; want back with the image", msgs[1].Body, msgs[1].MediaURLs)
	}
	link := msgs[1].MediaURLs[0]
	if got := status(t, link); got != http.StatusOK {
		t.Errorf("GET the image's link: %d; want 200", got)
	}

	// The same over Telegram: ingress fetches the photo with getFile,
	// Telegram fetches the reply's from its link.
	tg.AddFile("photo-1", png.Bytes())
	if code := telegramUpdate(t, s.instance, tgSecret, telegramtest.Update(10, 4242,
		"mkdir -p tmp/ai_screenshots && cp inbox/* tmp/ai_screenshots/ && echo tg", "photo-1")); code != http.StatusOK {
		t.Fatalf("telegram update: %d", code)
	}
	if c := tg.WaitCalls(t, 1, 20*time.Second)[0]; c.Method != "sendPhoto" || c.Text != "tg" ||
		len(c.Photos) != 1 || !strings.HasPrefix(c.Photos[0], front.URL+"/images/") {
		t.Fatalf("telegram reply %+v; want the photo back by its link, captioned tg", c)
	}
	// PUBLIC_URL is http, where Telegram posts nothing: ingress polls too,
	// keeping its offset in the telegram bucket as nats.conf's ingress.
	tg.Send(telegramtest.Update(11, 4242, "echo polled", ""))
	if c := tg.WaitCalls(t, 2, 20*time.Second)[1]; c.Method != "sendMessage" || c.Text != "polled" {
		t.Fatalf("telegram reply %+v; want polled", c)
	}

	// Each serves its health, and only its own routes.
	for _, tt := range []struct {
		service, path string
		want          int
	}{
		{app.Ingress, "/images/x.jpeg", http.StatusNotFound},
		{app.Media, "/images/x.jpeg", http.StatusBadRequest},
		{app.Dispatcher, "/", http.StatusNotFound},
		{app.Egress, "/api/events", http.StatusNotFound},
	} {
		if got := status(t, procs[tt.service].URL+tt.path); got != tt.want {
			t.Errorf("%s GET %s: %d; want %d", tt.service, tt.path, got, tt.want)
		}
	}
	for name, p := range procs {
		for _, path := range []string{"/healthz", "/readyz"} {
			if got := status(t, p.URL+path); got != http.StatusOK {
				t.Errorf("%s GET %s: %d; want 200", name, path, got)
			}
		}
	}

	// `<service> healthcheck` (compose.yaml's) asks the one on its PORT.
	for name, p := range procs {
		cmd := exec.Command(p.argv[0], "healthcheck")
		cmd.Env = append(os.Environ(), "PORT="+envValue(p.env, "PORT"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s healthcheck: %v\n%s", name, err, out)
		}
	}
	cmd := exec.Command(procs[app.Media].argv[0], "healthcheck")
	cmd.Env = append(os.Environ(), "PORT="+freePort(t))
	if err := cmd.Run(); err == nil {
		t.Error("healthcheck of a port nobody listens on passed")
	}

	// Changes to approve: the runner draws the diff and the dispatcher arms
	// the approval's timer; approve has the runner commit them, on a branch.
	s.webhook(t, "whatsapp:"+phoneAlice, "git init -q -b main && printf 'inbox/\\ntmp/\\n' > .gitignore && echo a > kept.txt && "+
		"git add . && git -c user.name=t -c user.email=t@t commit -q -m init && echo committed", nil)
	if msgs = api.WaitMessages(t, 3, 30*time.Second); msgs[2].Body != "committed" {
		t.Fatalf("sent %q; want committed", msgs[2].Body)
	}
	s.webhook(t, "whatsapp:"+phoneAlice, "echo b >> kept.txt", nil)
	msgs = api.WaitMessages(t, 4, 30*time.Second)
	if !strings.HasSuffix(msgs[3].Body, runner.MsgApprove) || len(msgs[3].MediaURLs) != 1 {
		t.Fatalf("sent %q with media %q; want the changes to approve, with the diff drawn", msgs[3].Body, msgs[3].MediaURLs)
	}
	// On WhatsApp a quick reply with Approve and Reject buttons follows it.
	if msgs = api.WaitMessages(t, 5, 30*time.Second); msgs[4].Body != "Reply approve or reject." || msgs[4].ContentSID == "" {
		t.Fatalf("sent %q (content %q); want the approval's quick reply", msgs[4].Body, msgs[4].ContentSID)
	}
	s.webhook(t, "whatsapp:"+phoneAlice, "approve", nil)
	msgs = api.WaitMessages(t, 7, 30*time.Second)
	if !strings.HasPrefix(msgs[5].Body, "Approved.") || !strings.HasPrefix(msgs[6].Body, "Committed the changes to 1 file") {
		t.Fatalf("sent %q; want Approved., then Committed the changes …", sentBodies(msgs[5:]))
	}
	// Media keeps one image: the diff's; the first is gone.
	natstest.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if got := status(t, link); got != http.StatusNotFound {
			return fmt.Errorf("GET the first image after the diff's: %d; want 404", got)
		}
		return nil
	})

	// Dispatcher and runner down: the webhook is still taken and stored.
	procs[app.Dispatcher].kill()
	procs[app.Runner].kill()
	s.webhook(t, "whatsapp:"+phoneAlice, "echo again", nil)
	natstest.HoldsUntil(t, time.Now().Add(300*time.Millisecond), func() error {
		if msgs := api.Messages(); len(msgs) != 7 {
			return fmt.Errorf("sent %q with dispatcher and runner down; want only the replies so far", sentBodies(msgs))
		}
		return nil
	})
	procs[app.Dispatcher].start(t)
	procs[app.Runner].start(t)
	msgs = api.WaitMessages(t, 8, 30*time.Second)
	if got := msgs[7].Body; got != "again" {
		t.Errorf("sent %q after the restart; want again", got)
	}

	// Each counts what it did in Prometheus' format at /metrics.
	for _, tt := range []struct{ service, line string }{
		{app.Ingress, `textslash_messages_in_total{channel="whatsapp"} 6`},
		{app.Egress, `textslash_messages_out_total{channel="whatsapp",kind="done"} 6`},
		{app.Runner, `textslash_run_duration_seconds_count{status="ok"} 1`}, // since its restart
		{app.Dispatcher, `textslash_queued_messages 0`},
	} {
		natstest.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
			resp, err := http.Get(procs[tt.service].URL + "/metrics")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if !slices.Contains(strings.Split(string(body), "\n"), tt.line) {
				return fmt.Errorf("%s /metrics has no line %q", tt.service, tt.line)
			}
			return nil
		})
	}
	if v := ns.violations(); len(v) > 0 {
		t.Errorf("NATS refused the services %d times:\n%s", len(v), strings.Join(v, "\n"))
	}
}

// frontProxy routes as compose.yaml's proxy does: /images/ to media, the
// rest (webhooks) to ingress, /metrics nowhere. procs is read at each
// request: fill it before the first.
func frontProxy(t *testing.T, procs map[string]*instance) *httptest.Server {
	t.Helper()
	to := func(service string, w http.ResponseWriter, r *http.Request) {
		target, _ := url.Parse(procs[service].URL)
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/metrics":
			http.NotFound(w, r)
		case strings.HasPrefix(r.URL.Path, "/images/"):
			to(app.Media, w, r)
		default:
			to(app.Ingress, w, r)
		}
	}))
	t.Cleanup(front.Close)
	return front
}

// pngEncode writes a w×h gray PNG.
func pngEncode(w io.Writer, width, height int) error {
	return png.Encode(w, image.NewGray(image.Rect(0, 0, width, height)))
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The runner binary alone exits after TEXTSLASH_IDLE_EXIT without a job,
// with status 0; jobs wait in JetStream for its next start.
func TestRunnerIdleExit(t *testing.T) {
	ns := runNATSUsers(t)
	r := startService(t, app.Runner, append(ns.env(app.Runner), "TEXTSLASH_AGENT=shell", "TEXTSLASH_IDLE_EXIT=1s")...)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the idle runner did not exit")
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d; want 0", code)
	}
	log, _ := os.ReadFile(r.Log)
	if !strings.Contains(string(log), "no work for a while") {
		t.Errorf("log does not say why it exited:\n%s", tail(string(log), 2000))
	}
}
