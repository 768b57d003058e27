package discord_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/discord"
	"github.com/textslash/textslash/channels/discord/discordtest"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/kit"
	"github.com/textslash/textslash/natstest"
)

// A DM is stored once with the message id as its dedupe id, also when
// Discord delivers the event again; the gateway saw the bot's intents
// (no privileged one) and its heartbeats.
func TestDMStoredOnce(t *testing.T) {
	r := newRig(t)
	r.run(t)
	dm := r.fake.DM(person)
	m, err := r.fake.UserMessage(discordtest.Message{ChannelID: dm, Author: person, Content: "list my files"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.waitStored(t, 1)[0]
	want := contract.Inbound{V: got.V, ID: stored(m.ChannelID, m.ID), User: user(), Text: "list my files", At: got.At}
	if got.ID != want.ID || got.User != want.User || got.Text != want.Text || len(got.Media) != 0 {
		t.Fatalf("stored %+v; want %+v", got, want)
	}
	if _, err := r.fake.Dispatch("MESSAGE_CREATE", m); err != nil { // Discord delivering it again
		t.Fatal(err)
	}
	next, err := r.fake.UserMessage(discordtest.Message{ChannelID: dm, Author: person, Content: "and then"})
	if err != nil {
		t.Fatal(err)
	}
	// Events are handled in order: once the next is stored, the replay
	// was handled.
	if got := r.waitStored(t, 2); got[0].ID != stored(m.ChannelID, m.ID) || got[1].ID != stored(next.ChannelID, next.ID) {
		t.Fatalf("stored %s, %s; want %s once, then %s", got[0].ID, got[1].ID, m.ID, next.ID)
	}
	gw := r.fake.Gateway()
	if gw.Intents != int(discord.Intents) || gw.Intents&discordtest.IntentMessageContent != 0 {
		t.Fatalf("intents %b; want %b, without MESSAGE_CONTENT", gw.Intents, discord.Intents)
	}
	if gw.Heartbeats < 1 {
		t.Fatalf("%d heartbeats; want at least the first", gw.Heartbeats)
	}
}

// In a server, only a message mentioning the bot is taken, the mention
// taken out; the bot's answer goes to that channel.
func TestServerMention(t *testing.T) {
	r := newRig(t)
	r.run(t)
	ch := r.fake.GuildChannel("613425648685547541")
	if _, err := r.fake.UserMessage(discordtest.Message{ChannelID: ch, Author: person, Content: "not for the bot"}); err != nil {
		t.Fatal(err)
	}
	bot := r.fake.Bot
	m, err := r.fake.UserMessage(discordtest.Message{ChannelID: ch, Author: person, Content: "<@" + bot.ID + "> run the tests", Mentions: []discordtest.User{bot}})
	if err != nil {
		t.Fatal(err)
	}
	got := r.waitStored(t, 1) // events are handled in order: the first was dropped
	if got[0].ID != stored(m.ChannelID, m.ID) || got[0].Text != "run the tests" {
		t.Fatalf("stored %q (%s); want %q (%s)", got[0].Text, got[0].ID, "run the tests", m.ID)
	}
	// The channel notes where they wrote right after the store answered:
	// a reply cannot come sooner than that in life, but the test's Send can.
	natstest.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if got := discord.AnsweredIn(r.d, person.ID); got != ch {
			return fmt.Errorf("answered in %q; want %q", got, ch)
		}
		return nil
	})
	if _, err := r.d.Send(t.Context(), user(), channel.Message{Body: "all pass"}); err != nil {
		t.Fatal(err)
	}
	if msgs := r.fake.Messages(ch); msgs[len(msgs)-1].Content != "all pass" {
		t.Fatalf("channel's last message %q; want the answer there", msgs[len(msgs)-1].Content)
	}
}

// A voice message's attachment is a voice note in Media, which Fetch
// downloads from the CDN; Fetch refuses any other host.
func TestAttachmentIn(t *testing.T) {
	r := newRig(t)
	r.run(t)
	dm := r.fake.DM(person)
	clip := bytes.Repeat([]byte("OggS"), 100)
	a := r.fake.Attach(dm, "voice-message.ogg", "audio/ogg", clip)
	a.Duration = 3.2
	_, err := r.fake.UserMessage(discordtest.Message{ChannelID: dm, Author: person, Attachments: []discordtest.Attachment{a}, Flags: discordtest.FlagVoiceMessage})
	if err != nil {
		t.Fatal(err)
	}
	got := r.waitStored(t, 1)[0]
	want := contract.Media{URL: a.URL, ContentType: "audio/ogg", Name: "voice-message.ogg", Voice: true, Seconds: 3}
	if len(got.Media) != 1 || got.Media[0] != want {
		t.Fatalf("media %+v; want [%+v]", got.Media, want)
	}
	data, ct, err := r.d.Fetch(t.Context(), got.Media[0].URL)
	if err != nil || !bytes.Equal(data, clip) || ct != "audio/ogg" {
		t.Fatalf("Fetch = %d bytes, %q, %v; want the clip, audio/ogg", len(data), ct, err)
	}
	if _, _, err := r.d.Fetch(t.Context(), "http://169.254.169.254/latest/meta-data"); !errors.Is(err, channel.ErrNotMine) {
		t.Fatalf("Fetch of another host: %v; want channel.ErrNotMine", err)
	}
	if _, _, err := r.d.Fetch(t.Context(), strings.Replace(a.URL, "hm=", "hm=0", 1)); !errors.Is(err, discord.ErrGone) {
		t.Fatalf("Fetch of a badly signed URL: %v; want ErrGone", err)
	}
}

// A press of an approval's button is the choice as the person's message,
// stored once, and acknowledged by updating the message: buttons gone,
// the choice shown.
func TestButtonPress(t *testing.T) {
	r := newRig(t)
	r.run(t)
	id, err := r.d.Send(t.Context(), user(), channel.Message{Body: "Push to main?", Choices: contract.ApprovalChoices})
	if err != nil {
		t.Fatal(err)
	}
	dm := r.fake.DM(person)
	ic, err := r.fake.Press(dm, id, person, contract.ActionApprove)
	if err != nil {
		t.Fatal(err)
	}
	got := r.waitStored(t, 1)[0]
	if got.ID != stored(ic.ChannelID, ic.ID) || got.Text != contract.ActionApprove || got.User != user() {
		t.Fatalf("stored %+v; want %q from %v, id %s", got, contract.ActionApprove, user(), ic.ID)
	}
	var cbs []discordtest.Callback
	natstest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if cbs = r.fake.Callbacks(ic.ID); len(cbs) != 1 {
			return fmt.Errorf("%d answers to the interaction; want 1", len(cbs))
		}
		return nil
	})
	if cbs[0].Type != 7 {
		t.Fatalf("interaction answered with type %d; want 7 (update message)", cbs[0].Type)
	}
	msg := r.fake.Messages(dm)[0]
	if msg.Content != "Push to main?\n\n→ Approve" || len(msg.Components) != 0 {
		t.Fatalf("message after the press: %q with %d rows; want the choice shown, no buttons", msg.Content, len(msg.Components))
	}
}

// A message sent while the gateway connection is down is replayed when
// the bot resumes its session, and stored; the session is resumed, not
// identified anew.
func TestGatewayDropResumes(t *testing.T) {
	r := newRig(t)
	r.run(t)
	dm := r.fake.DM(person)
	if _, err := r.fake.UserMessage(discordtest.Message{ChannelID: dm, Author: person, Content: "before"}); err != nil {
		t.Fatal(err)
	}
	r.waitStored(t, 1)
	r.fake.Drop()
	during, err := r.fake.UserMessage(discordtest.Message{ChannelID: dm, Author: person, Content: "during the drop"})
	if err != nil {
		t.Fatal(err)
	}
	got := r.waitStored(t, 2)
	if got[1].ID != stored(during.ChannelID, during.ID) || got[1].Text != "during the drop" {
		t.Fatalf("second stored %q (%s); want the message sent during the drop (%s)", got[1].Text, got[1].ID, during.ID)
	}
	if gw := r.fake.Gateway(); gw.Resumes != 1 || gw.Identifies != 1 {
		t.Fatalf("identified %d, resumed %d times; want 1 and 1", gw.Identifies, gw.Resumes)
	}
}

// A wrong token is refused: Run says so instead of running deaf.
func TestRunBadToken(t *testing.T) {
	fake := discordtest.New(t, discordtest.Options{})
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{Channels: []string{discord.Channel}}); err != nil {
		t.Fatal(err)
	}
	cfg := discord.Config{BotToken: "MTA5ODc2NTQzMjEwOTg3NjU0Mw.GaBcDe.not-the-token-of-this-bot", Allowed: []string{person.ID}, APIURL: fake.URL}
	d, err := discord.New(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	k, err := kit.Open(t.Context(), ns.NC, d, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(t.Context(), k); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("Run with a wrong token: %v; want the 401", err)
	}
}

// A stranger's message and button press are dropped, not tried again:
// the press is acknowledged without a change (Discord shows no error),
// and the person's next message is stored at once.
func TestStrangerDropped(t *testing.T) {
	r := newRig(t)
	r.run(t)
	id, err := r.d.Send(t.Context(), user(), channel.Message{Body: "Push to main?", Choices: contract.ApprovalChoices})
	if err != nil {
		t.Fatal(err)
	}
	dm := r.fake.DM(person)
	ic, err := r.fake.Press(dm, id, stranger, contract.ActionApprove)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.fake.UserMessage(discordtest.Message{ChannelID: r.fake.DM(stranger), Author: stranger, Content: "echo hi"}); err != nil {
		t.Fatal(err)
	}
	m, err := r.fake.UserMessage(discordtest.Message{ChannelID: dm, Author: person, Content: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.waitStored(t, 1); got[0].ID != stored(m.ChannelID, m.ID) {
		t.Fatalf("stored %q; want only the person's message", got[0].Text)
	}
	cbs := r.fake.Callbacks(ic.ID)
	if len(cbs) != 1 || cbs[0].Type != 6 {
		t.Fatalf("the stranger's press answered %+v; want once, type 6 (acknowledged, message unchanged)", cbs)
	}
	if msg := r.fake.Messages(dm)[0]; len(msg.Components) != 1 {
		t.Fatalf("after the stranger's press the message has %d rows of buttons; want its buttons kept", len(msg.Components))
	}
	if n := r.logs.n("discord message not stored yet; trying again"); n != 0 {
		t.Fatalf("%d tries again; want none for a stranger", n)
	}
}

// A message JetStream does not take for a while (its stream gone, then
// back) is tried again with backoff until it is stored, well past the
// five tries in 3 s that publishing used to give up after; the gateway's
// next message waits behind it, in order.
func TestPublishWaitsOut(t *testing.T) {
	r := newRig(t)
	discord.ShortBackoff(t)
	r.run(t)
	if err := r.ns.JS.DeleteStream(t.Context(), contract.StreamIn); err != nil {
		t.Fatal(err)
	}
	dm := r.fake.DM(person)
	first, err := r.fake.UserMessage(discordtest.Message{ChannelID: dm, Author: person, Content: "first"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.fake.UserMessage(discordtest.Message{ChannelID: dm, Author: person, Content: "second"})
	if err != nil {
		t.Fatal(err)
	}
	natstest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if n := r.logs.n("discord message not stored yet; trying again"); n < 10 {
			return fmt.Errorf("%d tries again; want 10", n)
		}
		return nil
	})
	if err := bus.Provision(t.Context(), r.ns.JS, bus.Options{Channels: []string{discord.Channel}}); err != nil {
		t.Fatal(err)
	}
	if got := r.waitStored(t, 2); got[0].ID != stored(first.ChannelID, first.ID) || got[1].ID != stored(second.ChannelID, second.ID) {
		t.Fatalf("stored %q, %q; want first, then second", got[0].Text, got[1].Text)
	}
	if n := r.logs.n("discord message not stored; lost"); n != 0 {
		t.Fatalf("%d messages lost; want none", n)
	}
}
