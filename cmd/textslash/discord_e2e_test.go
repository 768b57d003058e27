package main

import (
	"bytes"
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
	"unicode/utf8"

	"github.com/textslash/textslash/channels/discord/discordtest"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
)

// discordPerson writes to the bot in the end-to-end tests; discordStranger
// is not allowed.
var (
	discordPerson   = discordtest.User{ID: "80351110224678912", Username: "alice"}
	discordStranger = discordtest.User{ID: "80351110224678999", Username: "mallory"}
)

const discordCreate = "POST /channels/{channel}/messages"

// discordBinary is cmd/discord, built once for the package's tests.
var discordBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "textslash-discord")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "discord")
	if out, err := exec.Command("go", "build", "-o", bin, "../discord").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build cmd/discord: %v\n%s", err, out)
	}
	return bin, nil
})

// discordChannel is cmd/discord running against inst as admin, with the
// fake as Discord.
type discordChannel struct {
	fake *discordtest.Server
	env  []string
	cmd  *exec.Cmd
	dm   string // the person's DM with the bot
}

func startDiscord(t *testing.T, inst *instance, fake *discordtest.Server) *discordChannel {
	t.Helper()
	bin, err := discordBinary()
	if err != nil {
		t.Fatal(err)
	}
	login := natsLogin(t, inst.Data, "admin")
	c := &discordChannel{fake: fake, dm: fake.DM(discordPerson), env: []string{
		"NATS_URL=" + login["NATS_URL"], "NATS_USER=" + login["NATS_USER"], "NATS_PASSWORD=" + login["NATS_PASSWORD"],
		"DISCORD_BOT_TOKEN=" + fake.Token(), "DISCORD_ALLOWED=" + discordPerson.ID,
		"DISCORD_API_URL=" + fake.URL, "DISCORD_CDN_URLS=" + fake.URL + "/attachments/", "TEXTSLASH_LOG_LEVEL=debug",
	}}
	c.start(t, bin)
	t.Cleanup(c.kill)
	return c
}

// start runs the channel and waits for its gateway session.
func (c *discordChannel) start(t *testing.T, bin string) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), "discord.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(bin)
	// PORT=0: its health endpoints on a port of the kernel's choosing.
	c.cmd.Env, c.cmd.Stdout, c.cmd.Stderr = append(append(os.Environ(), "PORT=0"), c.env...), log, log
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := os.ReadFile(log.Name())
			t.Logf("discord log:\n%s", tail(string(out), 6000))
		}
	})
	ids := c.fake.Gateway().Identifies
	natstest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if c.fake.Gateway().Identifies == ids || !c.fake.Connected() {
			return fmt.Errorf("the channel has not identified on the gateway")
		}
		return nil
	})
}

// kill ends the channel at once (SIGKILL), as a crash does.
func (c *discordChannel) kill() {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
}

// say is the person writing in their DM, with attachments.
func (c *discordChannel) say(t *testing.T, text string, files ...discordtest.Attachment) discordtest.Message {
	t.Helper()
	m, err := c.fake.UserMessage(discordtest.Message{ChannelID: c.dm, Author: discordPerson, Content: text, Attachments: files})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// bot is what the bot sent in the person's DM, as it stands (edits
// applied), oldest first.
func (c *discordChannel) bot() []discordtest.Message {
	var out []discordtest.Message
	for _, m := range c.fake.Messages(c.dm) {
		if m.Author.ID == c.fake.Bot.ID {
			out = append(out, m)
		}
	}
	return out
}

// wait waits for a bot message containing text and returns it.
func (c *discordChannel) wait(t *testing.T, text string) discordtest.Message {
	t.Helper()
	return waitSent(t, 60*time.Second, c.bot, func(m discordtest.Message) string { return m.Content }, text)
}

// tinyPNG is a small image for attachments and screenshots.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// discordServe is textslash serve with the bash agent (each message's
// first line run as a script; ::progress:: lines are progress) and a
// directory shared with its sandboxes holding shot.png.
func discordServe(t *testing.T) (*instance, string) {
	t.Helper()
	src := sharedDir(t)
	shot := filepath.Join(src, "shot.png")
	if err := os.WriteFile(shot, tinyPNG(t), 0o644); err != nil {
		t.Fatal(err)
	}
	return startServe(t, "TEXTSLASH_AGENT=head -n1 | bash", "TEXTSLASH_SANDBOX_SHARE="+src), shot
}

// The Discord channel (cmd/discord) in its own process against textslash
// serve, Discord played by discordtest: a DM in, progress and the reply
// out; a photo in and a screenshot out as attachments; a stranger
// ignored; a 429 honoured (no request on the bucket before its reset); a
// reply over 2,000 characters paged with MORE; and an approval answered
// with its button, the message then showing the choice.
func TestDiscordEndToEnd(t *testing.T) {
	inst, shot := discordServe(t)
	fake := discordtest.New(t, discordtest.Options{})
	c := startDiscord(t, inst, fake)

	c.say(t, "echo '::progress:: warming up'; echo hello from discord")
	c.wait(t, "warming up")
	c.wait(t, "hello from discord")
	strangerDM := fake.DM(discordStranger)
	if _, err := fake.UserMessage(discordtest.Message{ChannelID: strangerDM, Author: discordStranger, Content: "echo hi"}); err != nil {
		t.Fatal(err)
	}

	photo := fake.Attach(c.dm, "photo.png", "image/png", tinyPNG(t))
	m := c.say(t, "ls inbox; mkdir -p tmp/ai_screenshots && cp "+shot+" tmp/ai_screenshots/ && echo here it is", photo)
	img := c.wait(t, "here it is")
	if !strings.Contains(img.Content, m.ID) || len(img.Attachments) != 1 || !contract.IsImage(img.Attachments[0].ContentType) {
		t.Errorf("reply %q with %+v; want the inbox's photo (named by the message id %s) listed and the screenshot attached", img.Content, img.Attachments, m.ID)
	}

	fake.RateLimit(discordCreate, 1500*time.Millisecond)
	c.say(t, "echo after the limit")
	c.wait(t, "after the limit")
	var limited int
	for _, r := range fake.Requests() {
		if r.Route == discordCreate && r.Status == 429 {
			limited++
		}
	}
	if limited == 0 || fake.Early() != 0 {
		t.Errorf("%d answers 429, %d requests before a reset; want at least one 429, honoured", limited, fake.Early())
	}

	c.say(t, "for i in $(seq 1 120); do printf 'All 42 tests pass in the parser package. '; done; echo")
	first := c.wait(t, "Reply MORE")
	c.say(t, "MORE")
	second := c.wait(t, "(page 2/")
	for _, p := range []discordtest.Message{first, second} {
		if n := utf8.RuneCountInString(p.Content); n > 2000 || n < 1500 {
			t.Errorf("a page of %d characters; want a full page within Discord's 2,000", n)
		}
	}

	c.say(t, "git init -q -b main && printf 'inbox/\\ntmp/\\n' > .gitignore && echo a > kept.txt && git add .gitignore kept.txt && git -c user.name=t -c user.email=t@t commit -q -m init && echo committed")
	c.wait(t, "committed")
	c.say(t, "echo b >> kept.txt && echo changed it")
	ask := c.wait(t, "changed it")
	var choices []string
	for _, row := range ask.Components {
		for _, b := range row.Components {
			choices = append(choices, b.CustomID)
		}
	}
	if !slices.Equal(choices, contract.ApprovalChoices) {
		t.Fatalf("approval request %q with buttons %q; want %q", ask.Content, choices, contract.ApprovalChoices)
	}
	ic, err := fake.Press(c.dm, ask.ID, discordPerson, contract.ActionApprove)
	if err != nil {
		t.Fatal(err)
	}
	c.wait(t, "Approved.")
	c.wait(t, "Committed the changes to 1 file")
	if cbs := fake.Callbacks(ic.ID); len(cbs) != 1 || cbs[0].Type != 7 {
		t.Errorf("the press answered %+v; want once, with the message updated (7)", cbs)
	}
	for _, m := range c.bot() {
		if m.ID == ask.ID && (len(m.Components) != 0 || !strings.HasSuffix(m.Content, "→ Approve")) {
			t.Errorf("the approval request after the press: %q with %d rows; want the choice shown, no buttons", m.Content, len(m.Components))
		}
	}
	if msgs := fake.Messages(strangerDM); len(msgs) != 1 {
		t.Errorf("the stranger's DM holds %d messages; want only theirs (ignored)", len(msgs))
	}
}

// The Discord channel killed (SIGKILL) while Discord holds the answer to
// the first message of a reply of two (the text with 10 screenshots, then
// 10 files: Discord's 10 attachments a message), then started again: the
// message in flight is found in the DM and not sent again, the next one
// is sent, none twice, none lost, and the person's next message is
// answered.
func TestDiscordRestartMidReply(t *testing.T) {
	inst, shot := discordServe(t)
	fake := discordtest.New(t, discordtest.Options{})
	c := startDiscord(t, inst, fake)
	c.say(t, "echo ready")
	c.wait(t, "ready")

	held := fake.Hold(func(m discordtest.Message) bool {
		return m.Content == "many parts" && len(m.Attachments) == 10
	})
	before := len(c.bot())
	c.say(t, "mkdir -p tmp/ai_screenshots; for i in $(seq 10 19); do cp "+shot+" tmp/ai_screenshots/s$i.png; echo $i > f$i.csv; echo FILE_CAPTURED:f$i.csv; done; echo many parts")
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatalf("the reply's first message never came; the bot sent %d messages", len(c.bot())-before)
	}
	c.kill()
	bin, _ := discordBinary()
	c.start(t, bin)
	// The event in the killed channel's hands comes again after the
	// consumer's ack wait (contract.EgressAckWait, 30 s).
	natstest.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		if n := len(c.bot()) - before; n < 2 {
			return fmt.Errorf("%d messages of the reply; want 2", n)
		}
		return nil
	})
	c.say(t, "echo after the restart")
	c.wait(t, "after the restart")
	var reply []string
	for _, m := range c.bot()[before:] {
		var files []string
		for _, a := range m.Attachments {
			if strings.HasPrefix(a.ContentType, "image/") {
				a.Filename = "image"
			}
			files = append(files, strings.TrimSuffix(a.Filename, ".csv"))
		}
		reply = append(reply, fmt.Sprintf("%q%v", m.Content, files))
	}
	images := "[" + strings.TrimSpace(strings.Repeat("image ", 10)) + "]"
	want := []string{`"many parts"` + images, `""[f10 f11 f12 f13 f14 f15 f16 f17 f18 f19]`, `"after the restart"[]`}
	if !slices.Equal(reply, want) {
		t.Errorf("after the kill the bot sent %v; want %v (each once, none lost)", reply, want)
	}
}

// A question of the agent's (the real Claude Code asking to run a
// command) comes to Discord with its buttons; the press answers it.
func TestDiscordQuestion(t *testing.T) {
	model := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]any{"command": "echo pressed > pressed.txt"}),
		claudetest.Text("Made it with one press."),
	)
	inst := startServe(t, claudeEnv(t, model)...)
	fake := discordtest.New(t, discordtest.Options{})
	c := startDiscord(t, inst, fake)
	c.say(t, "make it")
	q := c.wait(t, "Claude wants to run `echo pressed > pressed.txt`")
	var choices []string
	for _, row := range q.Components {
		for _, b := range row.Components {
			choices = append(choices, b.CustomID)
		}
	}
	if want := []string{"yes", "no", "always"}; !slices.Equal(choices, want) {
		t.Fatalf("question's buttons %q; want %q", choices, want)
	}
	if _, err := fake.Press(c.dm, q.ID, discordPerson, choices[0]); err != nil {
		t.Fatal(err)
	}
	c.wait(t, "Made it with one press.")
	ws := filepath.Join(inst.Data, "workspaces", "discord."+discordPerson.ID)
	if b, err := os.ReadFile(filepath.Join(ws, "pressed.txt")); err != nil || string(b) != "pressed\n" {
		t.Errorf("pressed.txt = %q, %v; want pressed (the button allowed the command)", b, err)
	}
}

// discord --help names every variable the channel reads, and bad settings
// are refused before it connects.
func TestDiscordHelp(t *testing.T) {
	bin, err := discordBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("discord --help: %v\n%s", err, out)
	}
	for _, v := range []string{"NATS_URL", "NATS_USER", "NATS_PASSWORD", "DISCORD_BOT_TOKEN", "DISCORD_ALLOWED", "DISCORD_API_URL", "DISCORD_CDN_URLS", "channel-discord"} {
		if !strings.Contains(string(out), v) {
			t.Errorf("discord --help does not name %s:\n%s", v, out)
		}
	}
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"DISCORD_ALLOWED=80351110224678912"}, "DISCORD_BOT_TOKEN"},
		{[]string{"DISCORD_BOT_TOKEN=MTA5ODc2NTQzMjEwOTg3NjU0Mw.GaBcDe.abcdefghij0123", "DISCORD_ALLOWED=alice"}, "DISCORD_ALLOWED"},
	} {
		cmd := exec.Command(bin)
		cmd.Env = append([]string{"NATS_URL=nats://127.0.0.1:1", "PATH=/usr/bin:/bin"}, tc.env...)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), tc.want) {
			t.Errorf("discord with %q: exit %d, %v\n%s; want 2, %s named", tc.env, code, err, out, tc.want)
		}
	}
}

// cmd/discord logged in as nats.conf's channel-discord user does all it
// does within that user's permissions: a DM stored in IN, the runner's
// fetch of its photo answered into the media store, an event's reply and
// image sent, and NATS refusing nothing.
func TestDiscordNATSUser(t *testing.T) {
	n := runNATSUsers(t)
	fake := discordtest.New(t, discordtest.Options{})
	bin, err := discordBinary()
	if err != nil {
		t.Fatal(err)
	}
	c := &discordChannel{fake: fake, dm: fake.DM(discordPerson), env: append(n.env("channel-discord"),
		"DISCORD_BOT_TOKEN="+fake.Token(), "DISCORD_ALLOWED="+discordPerson.ID,
		"DISCORD_API_URL="+fake.URL, "DISCORD_CDN_URLS="+fake.URL+"/attachments/", "TEXTSLASH_LOG_LEVEL=debug")}
	c.start(t, bin)
	t.Cleanup(c.kill)

	photo := fake.Attach(c.dm, "photo.png", "image/png", tinyPNG(t))
	m := c.say(t, "look at this", photo)
	u := contract.User{Channel: "discord", ID: discordPerson.ID}
	stream, err := n.JS.Stream(t.Context(), contract.StreamIn)
	if err != nil {
		t.Fatal(err)
	}
	var in contract.Inbound
	natstest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		msg, err := stream.GetLastMsgForSubject(t.Context(), contract.InboundSubject(u))
		if err != nil {
			return err
		}
		return contract.Decode(msg.Data, &in)
	})
	if in.ID != m.ChannelID+"-"+m.ID || in.Text != "look at this" || len(in.Media) != 1 {
		t.Fatalf("stored %+v; want the DM with its photo", in)
	}

	runner, _ := n.connect(t, "runner")
	req, err := contract.Encode(&contract.MediaFetch{User: u, Media: in.Media[0]})
	if err != nil {
		t.Fatal(err)
	}
	var img contract.Image
	natstest.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		resp, err := runner.Conn().Request(contract.MediaFetchSubject("discord"), req, 5*time.Second)
		if err != nil {
			return err
		}
		if code := resp.Header.Get("Nats-Service-Error-Code"); code != "" {
			return fmt.Errorf("media fetch refused: %s %s", code, resp.Header.Get("Nats-Service-Error"))
		}
		return json.Unmarshal(resp.Data, &img)
	})
	if img.ID == "" || img.ContentType != contract.ImagePNG {
		t.Fatalf("media fetch answered %+v; want the photo stored", img)
	}

	ev := contract.Event{User: u, JobID: m.ID, Kind: contract.KindDone, Text: "seen it", Images: []contract.Image{img}}
	if err := bus.PublishEvent(t.Context(), n.JS, ev, contract.MsgID(u, m.ID, "done")); err != nil {
		t.Fatal(err)
	}
	reply := c.wait(t, "seen it")
	if len(reply.Attachments) != 1 {
		t.Errorf("reply %q with %d attachments; want the photo back", reply.Content, len(reply.Attachments))
	}
	if v := n.violations(); len(v) > 0 {
		t.Errorf("NATS refused channel-discord %d times:\n%s", len(v), strings.Join(v, "\n"))
	}
}
