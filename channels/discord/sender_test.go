package discord_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/channels/discord"
	"github.com/textslash/textslash/channels/discord/discordtest"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/pages"
)

const createRoute = "POST /channels/{channel}/messages"

// body is a recorded request's JSON body.
func body(t *testing.T, r discordtest.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// A text goes to the person's DM (opened once), pinging nobody.
func TestSendText(t *testing.T) {
	r := newRig(t)
	for range 2 {
		if _, err := r.d.Send(t.Context(), user(), channel.Message{Body: "done @everyone"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(r.fake.Sent("POST /users/@me/channels")); n != 1 {
		t.Fatalf("DM opened %d times; want 1", n)
	}
	sent := r.fake.Sent(createRoute)
	if len(sent) != 2 || sent[0].Path != "/channels/"+r.fake.DM(person)+"/messages" {
		t.Fatalf("sent %+v; want 2 messages to the DM", sent)
	}
	b := body(t, sent[0])
	if b["content"] != "done @everyone" {
		t.Fatalf("content %v; want the text", b["content"])
	}
	if am, ok := b["allowed_mentions"].(map[string]any); !ok || am["parse"] == nil || len(am["parse"].([]any)) != 0 {
		t.Fatalf("allowed_mentions %v; want parse: [] (no pings)", b["allowed_mentions"])
	}
}

// Progress lines of one run edit one message; a new run's first line is
// a new message.
func TestSendProgress(t *testing.T) {
	r := newRig(t)
	for _, m := range []channel.Message{
		{Body: "Reading files", Progress: true, JobID: "j1"},
		{Body: "Running tests", Progress: true, JobID: "j1"},
		{Body: "Running tests", Progress: true, JobID: "j1"},
		{Body: "Reading files", Progress: true, JobID: "j2"},
	} {
		if _, err := r.d.Send(t.Context(), user(), m); err != nil {
			t.Fatal(err)
		}
	}
	msgs := r.fake.Messages(r.fake.DM(person))
	if len(msgs) != 2 || msgs[0].Content != "Running tests" || msgs[1].Content != "Reading files" {
		t.Fatalf("messages %+v; want j1's edited to its last line, then j2's", msgs)
	}
	if n := len(r.fake.Sent("PATCH /channels/{channel}/messages/{message}")); n != 1 {
		t.Fatalf("%d edits; want 1 (the same line is not sent again)", n)
	}
}

// Images and files of a reply, read from the media store with the kit
// (no HTTP fetch), are uploaded as attachments of one message, with the
// text.
func TestSendAttachments(t *testing.T) {
	r := newRig(t)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 2000)...)
	notes := []byte("all 42 tests pass\n")
	m := channel.Message{Body: "the page"}
	r.attach(t, &m, "image/png", "", png)
	r.attach(t, &m, "text/plain", "notes.txt", notes)
	if _, err := r.d.Send(t.Context(), user(), m); err != nil {
		t.Fatal(err)
	}
	sent := r.fake.Sent(createRoute)
	if len(sent) != 1 || len(sent[0].Files) != 2 {
		t.Fatalf("sent %+v; want one message with two files", sent)
	}
	if f := sent[0].Files[0]; f.Name != "image.png" || f.ContentType != "image/png" || !bytes.Equal(f.Data, png) {
		t.Fatalf("file %q %q (%d bytes); want image.png, image/png, the image", f.Name, f.ContentType, len(f.Data))
	}
	if f := sent[0].Files[1]; f.Name != "notes.txt" || f.ContentType != "text/plain" || !bytes.Equal(f.Data, notes) {
		t.Fatalf("file %q %q %q; want notes.txt, text/plain, the notes", f.Name, f.ContentType, f.Data)
	}
	if msg := r.fake.Messages(r.fake.DM(person))[0]; msg.Content != "the page" || len(msg.Attachments) != 2 {
		t.Fatalf("message %+v; want the text with the image and file attached", msg)
	}
	large := channel.Message{Media: []string{"stored:large"},
		Attachments: []channel.Attachment{{Data: make([]byte, 25<<20+1), ContentType: "text/plain", Name: "large.txt"}}}
	_, err := r.d.Send(t.Context(), user(), large)
	var se *channel.SendError
	if !errors.As(err, &se) || !se.Permanent {
		t.Fatalf("a file over Discord's limit: %v; want a permanent SendError", err)
	}
}

// A question's choices are buttons, one row, each sending its choice.
func TestSendButtons(t *testing.T) {
	r := newRig(t)
	if _, err := r.d.Send(t.Context(), user(), channel.Message{Body: "Run rm -rf build?", Choices: contract.QuestionChoices}); err != nil {
		t.Fatal(err)
	}
	msg := r.fake.Messages(r.fake.DM(person))[0]
	if len(msg.Components) != 1 || len(msg.Components[0].Components) != len(contract.QuestionChoices) {
		t.Fatalf("components %+v; want one row of %d buttons", msg.Components, len(contract.QuestionChoices))
	}
	for i, b := range msg.Components[0].Components {
		if b.Type != discordtest.ComponentButton || b.CustomID != contract.QuestionChoices[i] || b.Label == "" {
			t.Fatalf("button %d %+v; want one sending %q", i, b, contract.QuestionChoices[i])
		}
	}
}

// A long reply: the channel's rules cut it into pages of at most 2,000
// characters, each taken by Discord; a text over the limit reaching Send
// anyway is cut to it rather than refused.
func TestSendLongReply(t *testing.T) {
	r := newRig(t)
	if got := r.d.Rules().BodyLimit; got != discord.BodyLimit {
		t.Fatalf("BodyLimit %d; want %d", got, discord.BodyLimit)
	}
	long := strings.Repeat("All 42 tests pass in the parser package. ", 120) // 4,920 characters
	ps, err := pages.Split(long, r.d.Rules().BodyLimit, func(i, n int) string { return "\n\nReply MORE (page 1/9)" })
	if err != nil || len(ps) < 3 {
		t.Fatalf("pages.Split: %d pages, %v", len(ps), err)
	}
	for _, p := range ps {
		if _, err := r.d.Send(t.Context(), user(), channel.Message{Body: p}); err != nil {
			t.Fatalf("page of %d characters: %v", utf8.RuneCountInString(p), err)
		}
	}
	if _, err := r.d.Send(t.Context(), user(), channel.Message{Body: long}); err != nil {
		t.Fatalf("a reply over the limit: %v; want it cut", err)
	}
	msgs := r.fake.Messages(r.fake.DM(person))
	last := msgs[len(msgs)-1].Content
	if n := utf8.RuneCountInString(last); n > discord.BodyLimit || n < discord.BodyLimit-50 || !strings.HasSuffix(last, "…") {
		t.Fatalf("cut reply has %d characters; want just under 2,000, ending in …", n)
	}
}

// A 429 is returned with its retry_after, not tried by discordgo; the try
// after it goes out once.
func TestSendRateLimited(t *testing.T) {
	r := newRig(t)
	if _, err := r.d.Send(t.Context(), user(), channel.Message{Body: "first"}); err != nil {
		t.Fatal(err)
	}
	r.fake.RateLimit(createRoute, 1500*time.Millisecond)
	_, err := r.d.Send(t.Context(), user(), channel.Message{Body: "second"})
	var se *channel.SendError
	if !errors.As(err, &se) || se.Permanent || se.Status != 429 || se.RetryAfter != 1500*time.Millisecond {
		t.Fatalf("Send under a 429: %#v; want a SendError to retry after 1.5s", err)
	}
	if _, err := r.d.Send(t.Context(), user(), channel.Message{Body: "second"}); err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, m := range r.fake.Messages(r.fake.DM(person)) {
		contents = append(contents, m.Content)
	}
	if strings.Join(contents, ",") != "first,second" {
		t.Fatalf("messages %q; want first, second once", contents)
	}
	if n := r.fake.Early(); n != 0 {
		t.Fatalf("%d requests before the 429's reset; want none", n)
	}
}

// A person who blocked the bot: permanent, with Discord's code.
func TestSendForbidden(t *testing.T) {
	r := newRig(t)
	r.fake.Forbid(r.fake.DM(person))
	_, err := r.d.Send(t.Context(), user(), channel.Message{Body: "hello"})
	var se *channel.SendError
	if !errors.As(err, &se) || !se.Permanent || se.Status != 403 || se.Code != 50007 {
		t.Fatalf("Send to a closed DM: %#v; want permanent, 403, code 50007", err)
	}
}

// Find finds a message the bot sent since then (a crash between the send
// and its record), and nothing for a message never sent.
func TestFind(t *testing.T) {
	r := newRig(t)
	since := time.Now()
	id, err := r.d.Send(t.Context(), user(), channel.Message{Body: "the reply"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.d.Find(t.Context(), user(), channel.Message{Body: "the reply"}, since); err != nil || got != id {
		t.Fatalf("Find = %q, %v; want %q", got, err, id)
	}
	if got, err := r.d.Find(t.Context(), user(), channel.Message{Body: "never sent"}, since); err != nil || got != "" {
		t.Fatalf("Find of a message never sent = %q, %v; want none", got, err)
	}
}

// Typing shows "typing…" in the person's channel.
func TestTyping(t *testing.T) {
	r := newRig(t)
	if err := r.d.Typing(t.Context(), user(), "j1"); err != nil {
		t.Fatal(err)
	}
	if sent := r.fake.Sent("POST /channels/{channel}/typing"); len(sent) != 1 || sent[0].Path != "/channels/"+r.fake.DM(person)+"/typing" {
		t.Fatalf("typing %+v; want one in the DM", sent)
	}
}

// A reply goes to the channel its job came from (a job's id is its
// message's, <channel>-<message>), even when this process never saw the
// person write there (after a restart); a message of no job goes to the
// DM.
func TestReplyGoesWhereItsJobCameFrom(t *testing.T) {
	r := newRig(t)
	ch := r.fake.GuildChannel("613425648685547541")
	if _, err := r.d.Send(t.Context(), user(), channel.Message{Body: "all pass", JobID: ch + "-1098765432109876543"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.d.Send(t.Context(), user(), channel.Message{Body: "a notice"}); err != nil {
		t.Fatal(err)
	}
	if msgs := r.fake.Messages(ch); len(msgs) != 1 || msgs[0].Content != "all pass" {
		t.Errorf("the job's channel holds %+v; want the reply", msgs)
	}
	if msgs := r.fake.Messages(r.fake.DM(person)); len(msgs) != 1 || msgs[0].Content != "a notice" {
		t.Errorf("the DM holds %+v; want the notice", msgs)
	}
}

// Discord's crawler never fetches a link textslash sends (a preview link
// opens the person's dev server to whoever has it): every message goes
// with SUPPRESS_EMBEDS, a reply carrying preview links, one with
// attachments, and progress lines, sent or edited.
func TestSendEmbedsNoLinks(t *testing.T) {
	r := newRig(t)
	link := "https://abc.preview.example.com/"
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 100)...)
	shot := channel.Message{Body: "Here it is: " + link}
	r.attach(t, &shot, "image/png", "", png)
	for _, m := range []channel.Message{
		{Body: "The app is running: " + link, Links: []contract.Link{{URL: link, Label: "Open port 5173"}}},
		shot,
		{Body: "Running npm run dev", Progress: true, JobID: "j1"},
		{Body: "Fetching " + link, Progress: true, JobID: "j1"},
	} {
		if _, err := r.d.Send(t.Context(), user(), m); err != nil {
			t.Fatal(err)
		}
	}
	msgs := r.fake.Messages(r.fake.DM(person))
	if len(msgs) != 3 || msgs[2].Content != "Fetching "+link {
		t.Fatalf("messages %+v; want the two replies, then the progress message edited", msgs)
	}
	for i, m := range msgs {
		if m.Flags&discordtest.FlagSuppressEmbeds == 0 {
			t.Errorf("message %d %q: flags %b; want SUPPRESS_EMBEDS (%b)", i, m.Content, m.Flags, discordtest.FlagSuppressEmbeds)
		}
	}
}
