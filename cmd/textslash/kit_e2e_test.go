package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
)

// lineProvider is the provider of examples/linechat: it takes the
// channel's sends (POST /send), finds one again (GET /find), and serves
// the files people attach (GET /files/<name>). A send whose text is hold
// is recorded, then answered only when the test lets go (or the channel
// hangs up).
type lineProvider struct {
	*httptest.Server
	mu    sync.Mutex
	sent  []lineSent
	files map[string][]byte
	hold  func(lineSent) bool
	held  chan struct{}
}

type lineSent struct {
	ID      string
	User    string   `json:"user"`
	Text    string   `json:"text"`
	Files   [][]byte `json:"files"`
	Types   []string `json:"types"`
	Choices []string `json:"choices"`
	At      time.Time
}

func newLineProvider(t *testing.T) *lineProvider {
	p := &lineProvider{files: map[string][]byte{}, held: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /send", func(w http.ResponseWriter, r *http.Request) {
		var s lineSent
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		s.ID, s.At = fmt.Sprintf("L%d", len(p.sent)+1), time.Now()
		p.sent = append(p.sent, s)
		hold := p.hold != nil && p.hold(s)
		p.mu.Unlock()
		if hold {
			p.held <- struct{}{}
			<-r.Context().Done() // the channel was killed meanwhile
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"id": s.ID})
	})
	mux.HandleFunc("GET /find", func(w http.ResponseWriter, r *http.Request) {
		since, _ := time.Parse(time.RFC3339Nano, r.FormValue("since"))
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, s := range p.sent {
			if s.User == r.FormValue("user") && s.Text == r.FormValue("text") && !s.At.Before(since) {
				_ = json.NewEncoder(w).Encode(map[string]string{"id": s.ID})
				return
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]string{})
	})
	mux.HandleFunc("GET /files/{name}", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		data, ok := p.files[r.PathValue("name")]
		p.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(data)
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

// messages is what the provider took, in order.
func (p *lineProvider) messages() []lineSent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.sent)
}

// wait waits for a message containing text and returns it.
func (p *lineProvider) wait(t *testing.T, text string) lineSent {
	t.Helper()
	return waitSent(t, 90*time.Second, p.messages, func(s lineSent) string { return s.Text }, text)
}

// waitSent waits until sent() holds a message whose text contains want,
// and returns the first such: a fake provider's record of what a channel
// sent.
func waitSent[M any](t *testing.T, within time.Duration, sent func() []M, text func(M) string, want string) M {
	t.Helper()
	var found M
	natstest.CheckFor(t, within, 20*time.Millisecond, func() error {
		var texts []string
		for _, m := range sent() {
			if strings.Contains(text(m), want) {
				found = m
				return nil
			}
			texts = append(texts, text(m))
		}
		return fmt.Errorf("no message containing %q; sent %q", want, texts)
	})
	return found
}

// lineChannel is examples/linechat running against inst under its own
// login.
type lineChannel struct {
	bin, url string
	env      []string
	cmd      *exec.Cmd
}

// startLineChannel builds examples/linechat and runs it for alice.
func startLineChannel(t *testing.T, inst *instance, p *lineProvider) *lineChannel {
	t.Helper()
	root, err := natstest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "linechat")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join(root, "examples", "linechat")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build examples/linechat: %v\n%s", err, out)
	}
	// The login textslash serve made for it (TEXTSLASH_CHANNELS=linechat):
	// a channel's rights and no more, as nats.conf's template gives.
	login := natsLogin(t, inst.Data, "channel-linechat")
	port := freePort(t)
	c := &lineChannel{bin: bin, url: "http://127.0.0.1:" + port, env: []string{
		"NATS_URL=" + login["NATS_URL"], "NATS_USER=" + login["NATS_USER"], "NATS_PASSWORD=" + login["NATS_PASSWORD"],
		"LINECHAT_PROVIDER=" + p.URL, "LINECHAT_ALLOWED=alice", "LINECHAT_LISTEN=127.0.0.1:" + port, "LINECHAT_SECRET=" + lineSecret,
	}}
	c.start(t)
	t.Cleanup(func() { c.kill() })
	return c
}

func (c *lineChannel) start(t *testing.T) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "linechat.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(c.bin)
	c.cmd.Env, c.cmd.Stdout, c.cmd.Stderr = append(os.Environ(), c.env...), log, log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("linechat log:\n%s", tail(string(out), 4000))
		}
	})
}

// kill ends the channel at once, as a crash does.
func (c *lineChannel) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
}

// lineSecret is the secret the provider signs its posts to linechat with.
const lineSecret = "a secret linechat and its provider share"

// say posts a person's message to the channel, as the provider would,
// until the channel takes it.
func (c *lineChannel) say(t *testing.T, id, user, text string, media ...string) int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"id": id, "user": user, "text": text, "media": media})
	var code int
	natstest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		req, err := http.NewRequest(http.MethodPost, c.url+"/message", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+lineSecret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		code = resp.StatusCode
		return nil
	})
	return code
}

// A channel written with the kit from the README and channels.md alone
// (examples/linechat), in its own process against textslash serve: a
// message in, progress and the reply out; an image in and out; an
// approval answered with its choice; a stranger ignored; and the channel
// killed in the middle of a reply of three messages, restarted: the
// message in flight is found at the provider (Finder), none is sent
// twice, none is lost.
func TestPluginChannelEndToEnd(t *testing.T) {
	src := sharedDir(t)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(src, "shot.png")
	if err := os.WriteFile(shot, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The agent runs each message's line as a bash script (not the line
	// naming its attachments): its ::progress:: lines are progress.
	inst := startServe(t, "TEXTSLASH_AGENT=head -n1 | bash", "TEXTSLASH_SANDBOX_SHARE="+src, "TEXTSLASH_CHANNELS=linechat")
	p := newLineProvider(t)
	p.files["photo.png"] = buf.Bytes()
	c := startLineChannel(t, inst, p)

	c.say(t, "m1", "alice", "echo '::progress:: warming up'; echo hello from the kit")
	p.wait(t, "warming up")
	p.wait(t, "hello from the kit")
	if code := c.say(t, "s1", "mallory", "echo hi"); code != http.StatusForbidden {
		t.Errorf("a stranger's message: %d; want 403", code)
	}

	c.say(t, "m2", "alice", "ls inbox; mkdir -p tmp/ai_screenshots && cp "+shot+" tmp/ai_screenshots/ && echo here it is", p.URL+"/files/photo.png")
	img := p.wait(t, "here it is")
	if !strings.Contains(img.Text, "m2-1.png") || len(img.Files) != 1 || len(img.Files[0]) == 0 || !contract.IsImage(img.Types[0]) {
		t.Errorf("reply %q with %d files (%v); want the inbox's m2-1.png named and the screenshot attached", img.Text, len(img.Files), img.Types)
	}

	c.say(t, "m3", "alice", "git init -q -b main && printf 'inbox/\\ntmp/\\n' > .gitignore && echo a > kept.txt && git add .gitignore kept.txt && git -c user.name=t -c user.email=t@t commit -q -m init && echo committed")
	p.wait(t, "committed")
	c.say(t, "m4", "alice", "echo b >> kept.txt && echo changed it")
	ask := p.wait(t, "changed it")
	if !slices.Equal(ask.Choices, contract.ApprovalChoices) {
		t.Fatalf("approval request %q with choices %q; want %q", ask.Text, ask.Choices, contract.ApprovalChoices)
	}
	c.say(t, "m5", "alice", ask.Choices[0]) // the button pressed: its choice is the next message
	p.wait(t, "Approved.")
	p.wait(t, "Committed the changes to 1 file")

	// Killed while the provider holds the second message of three.
	p.mu.Lock()
	// Called under p.mu with s last in p.sent: the image after the text.
	p.hold = func(s lineSent) bool {
		return s.Text == "" && len(p.sent) > 1 && p.sent[len(p.sent)-2].Text == "three shots"
	}
	p.mu.Unlock()
	before := len(p.messages())
	c.say(t, "m6", "alice", "mkdir -p tmp/ai_screenshots && for i in 1 2 3; do cp "+shot+" tmp/ai_screenshots/s$i.png; done; echo three shots")
	<-p.held
	c.kill()
	p.mu.Lock()
	p.hold = nil
	p.mu.Unlock()
	c.start(t)
	// The event in the killed channel's hands comes again after the
	// consumer's ack wait (contract.EgressAckWait).
	natstest.CheckFor(t, 90*time.Second, 50*time.Millisecond, func() error {
		if n := len(p.messages()) - before; n < 3 {
			return fmt.Errorf("%d messages of the reply; want 3", n)
		}
		return nil
	})
	c.say(t, "m7", "alice", "echo after the restart")
	p.wait(t, "after the restart")
	var reply []string
	for _, s := range p.messages()[before:] {
		reply = append(reply, fmt.Sprintf("%q+%d", s.Text, len(s.Files)))
	}
	if want := []string{`"three shots"+1`, `""+1`, `""+1`, `"after the restart"+0`}; !slices.Equal(reply, want) {
		t.Errorf("after the kill the provider took %v; want %v (each once, none lost)", reply, want)
	}
}

// A question of the agent's comes to a kit channel with its choices, and
// the choice sent back as the person's next message answers it.
func TestPluginChannelQuestion(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "echo pressed > pressed.txt"}),
		claudetest.Text("Made it with one press."),
	)
	inst := startServe(t, append(claudeEnv(t, model), "TEXTSLASH_CHANNELS=linechat")...)
	p := newLineProvider(t)
	c := startLineChannel(t, inst, p)
	c.say(t, "q1", "alice", "make it")
	q := p.wait(t, "Claude wants to run `echo pressed > pressed.txt`")
	if want := []string{"yes", "no", "always"}; !slices.Equal(q.Choices, want) {
		t.Fatalf("question's choices %q; want %q", q.Choices, want)
	}
	c.say(t, "q2", "alice", q.Choices[0])
	p.wait(t, "Made it with one press.")
	ws := filepath.Join(inst.Data, "workspaces", "linechat.alice")
	if b, err := os.ReadFile(filepath.Join(ws, "pressed.txt")); err != nil || string(b) != "pressed\n" {
		t.Errorf("pressed.txt = %q, %v; want pressed (the choice allowed the command)", b, err)
	}
}
