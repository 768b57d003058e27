package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/channels/slack"
	"github.com/textslash/textslash/channels/slack/slacktest"
	"github.com/textslash/textslash/contract"
)

var (
	alice   = contract.User{Channel: "slack", ID: "U0ALICE1"}
	aliceDM = slacktest.DM("U0ALICE1")
)

// newSender is the Sender of a channel running against fake.
func newSender(t *testing.T, fake *slacktest.Server) *slack.Sender {
	t.Helper()
	s, _ := runSocket(t, fake)
	return s.Sender
}

// mentionIn has alice mention the bot in channel: what is sent to her
// next goes there.
func mentionIn(t *testing.T, fake *slacktest.Server, channel, ts string) {
	t.Helper()
	deliver(t, fake, "events_api", slacktest.Message{User: "U0ALICE1", Channel: channel, Mention: true,
		Text: "<@" + slacktest.BotUser + "> hi", TS: ts}.Event("Ev-"+ts), 0)
}

func send(t *testing.T, s *slack.Sender, u contract.User, m channel.Message) string {
	t.Helper()
	id, err := s.Send(context.Background(), u, m)
	if err != nil {
		t.Fatalf("Send(%+v): %v", m, err)
	}
	return id
}

func TestSendText(t *testing.T) {
	fake := slacktest.New(t)
	s := newSender(t, fake)
	id := send(t, s, alice, channel.Message{Body: "x < y && done"})
	mentionIn(t, fake, "C7", "1712345678.000100")
	send(t, s, alice, channel.Message{Body: "deployed"})
	deliver(t, fake, "events_api", slacktest.Message{User: "U0ALICE1", Channel: aliceDM, ChannelType: "im", Text: "back here",
		TS: "1712345678.000200"}.Event("Ev2"), 0)
	send(t, s, alice, channel.Message{Body: "and here"})
	sent := fake.Sent()
	if len(sent) != 3 {
		t.Fatalf("sent %d messages; want 3", len(sent))
	}
	if m := sent[0]; m.Channel != aliceDM || m.Text != "x &lt; y &amp;&amp; done" || m.TS != id || m.Blocks != nil {
		t.Errorf("unknown where she writes: %+v (id %s); want the escaped text in her DM %s, no blocks, its ts as the id", m, id, aliceDM)
	}
	if m := sent[1]; m.Channel != "C7" || m.Text != "<@U0ALICE1> deployed" {
		t.Errorf("after her mention in C7: %+v; want her mentioned in C7", m)
	}
	if m := sent[2]; m.Channel != aliceDM || m.Text != "and here" {
		t.Errorf("after her direct message: %+v; want her DM", m)
	}
}

func TestSendProgressEditsOneMessage(t *testing.T) {
	fake := slacktest.New(t)
	s := newSender(t, fake)
	first := send(t, s, alice, channel.Message{Body: "Reading the code", Progress: true, JobID: "j1"})
	second := send(t, s, alice, channel.Message{Body: "Running the tests", Progress: true, JobID: "j1"})
	send(t, s, alice, channel.Message{Body: "Starting", Progress: true, JobID: "j2"})
	sent := fake.Sent()
	if len(sent) != 2 || first != second {
		t.Fatalf("sent %+v (ids %s, %s); want one status message per run, the first edited", sent, first, second)
	}
	if m := sent[0]; m.Text != "Running the tests" || m.Updates != 1 {
		t.Errorf("status of j1: %+v; want its latest line, edited once", m)
	}
	if m := sent[1]; m.Text != "Starting" || m.Updates != 0 {
		t.Errorf("status of j2: %+v; want a message of its own", m)
	}
}

func TestSendImageUploaded(t *testing.T) {
	fake := slacktest.New(t)
	sl, _ := runSocket(t, fake)
	s := sl.Sender
	png := []byte("\x89PNG fake image")
	id := send(t, s, alice, channel.Message{Body: "The page now", Media: []string{"stored:abc"},
		Attachments: []channel.Attachment{{Data: png, ContentType: "image/png", Name: "image.png"}}})
	sent := fake.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %+v; want one share", sent)
	}
	m := sent[0]
	if m.Method != "files.completeUploadExternal" || m.Channel != aliceDM || m.Text != "The page now" || len(m.Files) != 1 {
		t.Fatalf("share %+v; want the image shared in %s with the text", m, aliceDM)
	}
	if f := m.Files[0]; f.ID != id || f.Name != "image.png" || f.Title != "image.png" || string(f.Data) != string(png) {
		t.Errorf("file %+v (id %s); want image.png with the image's bytes, its id returned", f, id)
	}
	empty := channel.Message{Media: []string{"stored:empty"}, Attachments: []channel.Attachment{{ContentType: "image/png", Name: "image.png"}}}
	if _, err := s.Send(context.Background(), alice, empty); !isPermanent(err) {
		t.Errorf("an empty image: %v; want a permanent SendError", err)
	}
}

// button is a Block Kit button as the fake recorded it.
type button struct {
	ActionID string `json:"action_id"`
	Value    string `json:"value"`
	Style    string `json:"style"`
	Text     struct {
		Text string `json:"text"`
	} `json:"text"`
}

type block struct {
	Type     string   `json:"type"`
	Elements []button `json:"elements"`
	Text     struct {
		Text string `json:"text"`
	} `json:"text"`
}

func blocksOf(t *testing.T, raw json.RawMessage) (text string, buttons []button) {
	t.Helper()
	var bs []block
	if err := json.Unmarshal(raw, &bs); err != nil {
		t.Fatalf("blocks %s: %v", raw, err)
	}
	for _, b := range bs {
		switch b.Type {
		case "section":
			if n := len([]rune(b.Text.Text)); n > 3000 {
				t.Errorf("a section of %d characters; Slack takes 3,000", n)
			}
			text += b.Text.Text
		case "actions":
			buttons = append(buttons, b.Elements...)
		}
	}
	return text, buttons
}

func TestChoicesAsButtonsAndPressed(t *testing.T) {
	fake := slacktest.New(t)
	s, p := runSocket(t, fake)
	send(t, s.Sender, alice, channel.Message{Body: "Approve the changes?", Choices: contract.ApprovalChoices})
	sent := fake.Sent()
	if len(sent) != 1 || sent[0].Blocks == nil {
		t.Fatalf("sent %+v; want one message with blocks", sent)
	}
	text, buttons := blocksOf(t, sent[0].Blocks)
	if text != "Approve the changes?" || sent[0].Text != text {
		t.Errorf("text %q (fallback %q); want the question in both", text, sent[0].Text)
	}
	want := []button{{ActionID: "choice-approve", Value: "approve", Style: "primary"}, {ActionID: "choice-reject", Value: "reject", Style: "danger"}}
	want[0].Text.Text, want[1].Text.Text = "Approve", "Reject"
	if len(buttons) != 2 || buttons[0] != want[0] || buttons[1] != want[1] {
		t.Fatalf("buttons %+v; want %+v", buttons, want)
	}
	press := slacktest.Press{User: "U0ALICE1", Channel: aliceDM, MessageTS: sent[0].TS, Text: sent[0].Text,
		ActionID: "choice-approve", Value: "approve", ActionTS: "1712345679.123456"}
	deliver(t, fake, "interactive", press.Payload(), 0)
	deliver(t, fake, "interactive", press.Payload(), 1)
	got := p.all()
	if len(got) != 1 || got[0].Text != "approve" || got[0].User != alice || got[0].ID != aliceDM+"-act-1712345679_123456" {
		t.Fatalf("published %+v; want approve from %s once", got, alice)
	}
	if m := fake.Sent()[0]; m.Blocks != nil || m.Text != "Approve the changes?\n\n→ Approve" {
		t.Errorf("pressed message now %+v; want its buttons gone and the choice shown", m)
	}
}

func TestLongReplyWithButtonsFitsSections(t *testing.T) {
	fake := slacktest.New(t)
	s := newSender(t, fake)
	mentionIn(t, fake, "C7", "1712345678.000100")
	body := strings.Repeat("a <b> & c\n", slack.BodyLimit/10) // escaped, over 3,000 characters
	send(t, s, alice, channel.Message{Body: body, Choices: contract.QuestionChoices})
	sent := fake.Sent()
	if len(sent) != 1 {
		t.Fatalf("sent %d messages; want 1", len(sent))
	}
	text, buttons := blocksOf(t, sent[0].Blocks)
	want := "<@U0ALICE1> " + strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(body)
	if text != want {
		t.Errorf("sections joined are %d characters; want the escaped reply whole (%d)", len(text), len(want))
	}
	if len(buttons) != 3 {
		t.Errorf("%d buttons; want yes, no, always", len(buttons))
	}
	if r := slack.Rules(); r.BodyLimit != slack.BodyLimit || r.Truncate {
		t.Errorf("Rules %+v; want pages of %d characters (MORE)", r, slack.BodyLimit)
	}
}

func TestSendErrors(t *testing.T) {
	fake := slacktest.New(t)
	s := newSender(t, fake)
	send(t, s, alice, channel.Message{Body: "opens the DM"})
	fake.RateLimit("chat.postMessage", 7)
	_, err := s.Send(context.Background(), alice, channel.Message{Body: "hello"})
	var se *channel.SendError
	if !errors.As(err, &se) || se.RetryAfter != 7*time.Second || se.Permanent || se.Status != http.StatusTooManyRequests {
		t.Errorf("after a 429: %#v; want a SendError with RetryAfter 7s, not permanent", err)
	}
	fake.Fail("chat.postMessage", "not_in_channel")
	if _, err := s.Send(context.Background(), alice, channel.Message{Body: "hello"}); !errors.As(err, &se) || !se.Permanent {
		t.Errorf("not_in_channel: %#v; want a permanent SendError", err)
	}
	fake.Fail("chat.postMessage", "internal_error")
	if _, err := s.Send(context.Background(), alice, channel.Message{Body: "hello"}); !errors.As(err, &se) || se.Permanent {
		t.Errorf("internal_error: %#v; want a SendError tried again", err)
	}
}

func TestFind(t *testing.T) {
	fake := slacktest.New(t)
	s := newSender(t, fake)
	since := time.Now().Add(-time.Second)
	m := channel.Message{Body: "the reply"}
	id := send(t, s, alice, m)
	send(t, s, alice, channel.Message{Body: "another"})
	got, err := s.Find(context.Background(), alice, m, since)
	if err != nil || got != id {
		t.Errorf("Find(sent) = %q, %v; want %q", got, err, id)
	}
	if got, err := s.Find(context.Background(), alice, channel.Message{Body: "never sent"}, since); err != nil || got != "" {
		t.Errorf("Find(not sent) = %q, %v; want none", got, err)
	}
	if got, err := s.Find(context.Background(), alice, m, time.Now().Add(time.Minute)); err != nil || got != "" {
		t.Errorf("Find(sent, since later) = %q, %v; want none", got, err)
	}
}

// A share of files is found by its files' titles and its text.
func TestFindShare(t *testing.T) {
	fake := slacktest.New(t)
	sl, _ := runSocket(t, fake)
	s := sl.Sender
	a := []channel.Attachment{{Data: []byte("\x89PNG a"), ContentType: "image/png", Name: "image.png"}}
	b := []channel.Attachment{{Data: []byte("%PDF b"), ContentType: "application/pdf", Name: "report.pdf"}}
	since := time.Now().Add(-time.Second)
	shot := channel.Message{Body: "the shot", Media: []string{"stored:a"}, Attachments: a}
	id := send(t, s, alice, shot)
	for _, tc := range []struct {
		name string
		m    channel.Message
		want string
	}{
		{"sent", shot, id},
		{"another text", channel.Message{Body: "other", Media: []string{"stored:a"}, Attachments: a}, ""},
		{"another file", channel.Message{Body: "the shot", Media: []string{"stored:b/report.pdf"}, Attachments: b}, ""},
		{"as a text", channel.Message{Body: "the shot"}, ""},
	} {
		if got, err := s.Find(context.Background(), alice, tc.m, since); err != nil || got != tc.want {
			t.Errorf("Find(%s) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func isPermanent(err error) bool {
	var se *channel.SendError
	return errors.As(err, &se) && se.Permanent
}

// A reply goes to the conversation its job came from (the job's id is the
// message's, <conversation>-<ts>), even when this process never saw the
// person write: after a restart, a reply to a mention in a channel goes
// to that channel, not to the person's direct message.
func TestReplyGoesWhereItsJobCameFrom(t *testing.T) {
	fake := slacktest.New(t)
	s := newSender(t, fake)
	send(t, s, alice, channel.Message{Body: "the tests pass", JobID: "C7-1712345678_000100"})
	send(t, s, alice, channel.Message{Body: "a notice of no job"})
	sent := fake.Sent()
	if len(sent) != 2 {
		t.Fatalf("sent %d messages; want 2", len(sent))
	}
	if sent[0].Channel != "C7" || !strings.HasPrefix(sent[0].Text, "<@U0ALICE1> ") {
		t.Errorf("the reply to a job from C7: in %s, %q; want in C7, mentioning her", sent[0].Channel, sent[0].Text)
	}
	if sent[1].Channel != aliceDM {
		t.Errorf("a message of no job, where she was never seen writing: in %s; want her direct message %s", sent[1].Channel, aliceDM)
	}
}
