package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/channels/slack/slacktest"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
)

// slackAlice is the Slack user allowed in; her DM with the bot is
// slacktest.DM(slackAlice).
const slackAlice = "U0ALICE1"

// slackEnv turns Slack on in Socket Mode against fake, for slackAlice.
func slackEnv(fake *slacktest.Server) []string {
	return []string{"SLACK_BOT_TOKEN=" + slacktest.BotToken, "SLACK_APP_TOKEN=" + slacktest.AppToken,
		"SLACK_ALLOWED=" + slackAlice, "TEXTSLASH_SLACK_API_URL=" + fake.APIURL()}
}

// slackPerson is a person writing to the bot through the fake Slack.
type slackPerson struct {
	fake *slacktest.Server
	user string
	ts   int
}

// say delivers a direct message of p's (with files) and waits for its
// acknowledgement: the channel has stored it, or dropped it.
func (p *slackPerson) say(t *testing.T, text string, files ...slacktest.SharedFile) {
	t.Helper()
	p.ts++
	msg := slacktest.Message{User: p.user, Channel: slacktest.DM(p.user), ChannelType: "im", Text: text,
		TS: fmt.Sprintf("1712345678.%06d", p.ts), Files: files}
	p.deliver(t, "events_api", msg.Event(fmt.Sprintf("Ev%s%d", p.user, p.ts)))
}

// press presses the button of choice on message m.
func (p *slackPerson) press(t *testing.T, m slacktest.Sent, choice string) {
	t.Helper()
	p.ts++
	press := slacktest.Press{User: p.user, Channel: m.Channel, MessageTS: m.TS, Text: m.Text, Blocks: m.Blocks,
		ActionID: "choice-" + choice, Value: choice, ActionTS: fmt.Sprintf("1712345690.%06d", p.ts)}
	p.deliver(t, "interactive", press.Payload())
}

func (p *slackPerson) deliver(t *testing.T, kind string, payload []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.fake.Deliver(ctx, kind, payload, 0); err != nil {
		t.Fatal(err)
	}
}

// waitSlack waits for a message the bot posted (or edited) containing
// text and returns it.
func waitSlack(t *testing.T, fake *slacktest.Server, text string) slacktest.Sent {
	t.Helper()
	return waitSent(t, 60*time.Second, fake.Sent, func(m slacktest.Sent) string { return slackText(t, m) }, text)
}

// slackBlock is a Block Kit block as the tests read it.
type slackBlock struct {
	Type string `json:"type"`
	Text struct {
		Text string `json:"text"`
	} `json:"text"`
	Elements []struct {
		Value string `json:"value"`
	} `json:"elements"`
}

func blocksOf(t *testing.T, m slacktest.Sent) []slackBlock {
	t.Helper()
	var blocks []slackBlock
	if m.Blocks != nil {
		if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
			t.Fatalf("blocks %s: %v", m.Blocks, err)
		}
	}
	return blocks
}

// slackText is what a message shows: its text, or its sections' (a
// share of files with buttons has no initial comment).
func slackText(t *testing.T, m slacktest.Sent) string {
	t.Helper()
	text := m.Text
	for _, b := range blocksOf(t, m) {
		if b.Type == "section" && !strings.Contains(text, b.Text.Text) {
			text += b.Text.Text
		}
	}
	return text
}

// choices are the values of a message's buttons.
func choices(t *testing.T, m slacktest.Sent) []string {
	t.Helper()
	var out []string
	for _, b := range blocksOf(t, m) {
		for _, e := range b.Elements {
			if b.Type == "actions" {
				out = append(out, e.Value)
			}
		}
	}
	return out
}

// pngShot is a small PNG, written to dir as shot.png too.
func pngShot(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	if err := os.WriteFile(shot, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return shot, buf.Bytes()
}

// Slack inside textslash serve, in Socket Mode against the fake Slack:
// a direct message in, its progress (one status message) and reply out; a
// stranger dropped and acknowledged; an image in (a file shared) and the
// agent's screenshot out (uploaded and shared); an approval by its button;
// a 429 on chat.postMessage waited for as long as its Retry-After says.
func TestSlackEndToEnd(t *testing.T) {
	src := sharedDir(t)
	shot, pngData := pngShot(t, src)
	fake := slacktest.New(t)
	startServe(t, append(slackEnv(fake), "TEXTSLASH_AGENT=head -n1 | bash", "TEXTSLASH_SANDBOX_SHARE="+src)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := fake.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	alice := &slackPerson{fake: fake, user: slackAlice}
	dm := slacktest.DM(slackAlice)

	alice.say(t, "echo '::progress:: warming up'; echo hello from slack")
	if m := waitSlack(t, fake, "warming up"); m.Channel != dm {
		t.Errorf("progress %+v; want it in alice's DM %s", m, dm)
	}
	if m := waitSlack(t, fake, "hello from slack"); m.Channel != dm || m.Method != "chat.postMessage" {
		t.Errorf("reply %+v; want a post in alice's DM %s", m, dm)
	}
	mallory := &slackPerson{fake: fake, user: "U0MALLORY", ts: 100}
	mallory.say(t, "echo let me in") // acknowledged (Deliver returned), and dropped

	photo := fake.AddFile("photo.png", "image/png", pngData)
	alice.say(t, "ls inbox; mkdir -p tmp/ai_screenshots && cp "+shot+" tmp/ai_screenshots/ && echo here it is",
		slacktest.SharedFile{ID: "F1", Name: "photo.png", Mimetype: "image/png", URL: photo})
	img := waitSlack(t, fake, "here it is")
	if img.Method != "files.completeUploadExternal" || len(img.Files) != 1 || len(img.Files[0].Data) == 0 ||
		!strings.Contains(img.Text, "-1.png") {
		t.Errorf("reply %+v; want the inbox's photo named and the screenshot uploaded with it", img)
	}

	alice.say(t, "git init -q -b main && printf 'inbox/\\ntmp/\\n' > .gitignore && echo a > kept.txt && git add .gitignore kept.txt && git -c user.name=t -c user.email=t@t commit -q -m init && echo committed")
	waitSlack(t, fake, "committed")
	alice.say(t, "echo b >> kept.txt && echo changed it")
	ask := waitSlack(t, fake, "changed it")
	if got := choices(t, ask); !slices.Equal(got, []string{"approve", "reject"}) {
		t.Fatalf("approval request %q with buttons %q; want approve and reject", slackText(t, ask), got)
	}
	alice.press(t, ask, "approve")
	waitSlack(t, fake, "Approved.")
	waitSlack(t, fake, "Committed the changes to 1 file")
	if m := waitSlack(t, fake, "→ Approve"); m.TS != ask.TS || m.Blocks != nil || !strings.Contains(m.Text, "changed it") {
		t.Errorf("the pressed message %+v; want its buttons replaced by the choice", m)
	}

	fake.RateLimit("chat.postMessage", 2)
	before := len(fake.Calls("chat.postMessage"))
	alice.say(t, "echo after the limit")
	waitSlack(t, fake, "after the limit")
	calls := fake.Calls("chat.postMessage")[before:]
	var limited *slacktest.Call
	for i, c := range calls {
		if c.Status == 429 && i+1 < len(calls) {
			limited = &calls[i]
			if wait := calls[i+1].At.Sub(c.At); wait < 2*time.Second {
				t.Errorf("tried again %s after a 429 with Retry-After: 2; want at least 2s", wait)
			}
		}
	}
	if limited == nil {
		t.Errorf("calls after the rate limit %+v; want a 429 and a try after it", calls)
	}
	for _, m := range fake.Sent() {
		if m.Channel == slacktest.DM("U0MALLORY") {
			t.Errorf("the stranger got %q; want nothing", m.Text)
		}
	}
}

// A question of Claude Code's comes to Slack with Yes / No / Always
// buttons, and the button pressed answers it.
func TestSlackQuestion(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "echo pressed > pressed.txt"}),
		claudetest.Text("Made it with one press."),
	)
	fake := slacktest.New(t)
	inst := startServe(t, append(claudeEnv(t, model), slackEnv(fake)...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := fake.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	alice := &slackPerson{fake: fake, user: slackAlice}
	alice.say(t, "make it")
	q := waitSlack(t, fake, "Claude wants to run `echo pressed &gt; pressed.txt`")
	if got := choices(t, q); !slices.Equal(got, []string{"yes", "no", "always"}) {
		t.Fatalf("question's buttons %q; want yes, no, always", got)
	}
	alice.press(t, q, "yes")
	waitSlack(t, fake, "Made it with one press.")
	ws := filepath.Join(inst.Data, "workspaces", "slack."+slackAlice)
	if b, err := os.ReadFile(filepath.Join(ws, "pressed.txt")); err != nil || string(b) != "pressed\n" {
		t.Errorf("pressed.txt = %q, %v; want pressed (the button allowed the command)", b, err)
	}
}

// slackBinary builds cmd/slack once.
var slackBinary = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(filepath.Dir(binary), "slack")
	if out, err := exec.Command("go", "build", "-o", bin, "../slack").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ../slack: %v\n%s", err, out)
	}
	return bin, nil
})

// The Slack channel as a process of its own (cmd/slack) beside textslash
// serve, killed (SIGKILL) while Slack holds its share of a reply (the
// files shared, its answer never given), and started again: the reply's
// event comes again after the consumer's ack wait, the share is found in
// the conversation's history (Finder) rather than sent again, and what
// follows arrives: none sent twice, none lost.
func TestSlackChannelRestart(t *testing.T) {
	src := sharedDir(t)
	shot, _ := pngShot(t, src)
	bin, err := slackBinary()
	if err != nil {
		t.Fatal(err)
	}
	inst := startServe(t, "TEXTSLASH_AGENT=head -n1 | bash", "TEXTSLASH_SANDBOX_SHARE="+src)
	fake := slacktest.New(t)
	login := natsLogin(t, inst.Data, "admin")
	env := append(slackEnv(fake), "NATS_URL="+login["NATS_URL"], "NATS_USER="+login["NATS_USER"], "NATS_PASSWORD="+login["NATS_PASSWORD"])
	ch := startProgram(t, []string{bin}, env...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := fake.Connections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	alice := &slackPerson{fake: fake, user: slackAlice}
	alice.say(t, "echo first")
	waitSlack(t, fake, "first")

	fake.Hold(func(m slacktest.Sent) bool { return m.Method == "files.completeUploadExternal" })
	alice.say(t, "mkdir -p tmp/ai_screenshots && for i in 1 2 3; do cp "+shot+" tmp/ai_screenshots/s$i.png; done; echo three shots")
	select {
	case <-fake.Held():
	case <-ctx.Done():
		t.Fatal("the reply's share never came")
	}
	ch.kill()
	fake.Hold(nil)
	ch.start(t)
	if err := fake.Connections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// The event in the killed channel's hands comes again after the
	// consumer's ack wait (contract.EgressAckWait), and its tried mark
	// has the channel look for the share in the history.
	natstest.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		if len(fake.Calls("conversations.history")) == 0 {
			return fmt.Errorf("the share not looked for yet")
		}
		return nil
	})
	alice.say(t, "echo after the restart")
	waitSlack(t, fake, "after the restart")
	var reply []string
	for _, m := range fake.Sent() {
		if m.Method == "files.completeUploadExternal" || strings.Contains(m.Text, "after the restart") {
			reply = append(reply, fmt.Sprintf("%q+%d", m.Text, len(m.Files)))
		}
	}
	if want := []string{`"three shots"+3`, `"after the restart"+0`}; !slices.Equal(reply, want) {
		t.Errorf("after the kill Slack took %v; want %v (each once, none lost)", reply, want)
	}
	// More than 30 s passed since the restart: the channel kept its
	// connection, which Slack pings (slacktest.PingEvery).
	if n := fake.Opened(); n != 2 {
		t.Errorf("the app opened %d Socket Mode connections; want 2 (one before the kill, one after)", n)
	}
}
