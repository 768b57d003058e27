package discord_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/discord"
	"github.com/textslash/textslash/channels/discord/discordtest"
	"github.com/textslash/textslash/channeltest"
	"github.com/textslash/textslash/natstest"
)

// The Discord channel passes the conformance suite.
func TestConformance(t *testing.T) {
	channeltest.Run(t, func(t *testing.T) channeltest.Provider {
		f := &discordFake{t: t, fake: discordtest.New(t, discordtest.Options{})}
		f.shared = f.fake.GuildChannel("90000000000000001")
		return channeltest.Provider{
			Channel: f.channel, Person: person.ID, Stranger: stranger.ID, Direct: f.direct, Shared: f.shared,
			Write: f.write, Press: f.press, Spoof: spoof, Hold: f.hold, Sent: f.sent,
		}
	})
}

// discordFake is the suite's Discord: the fake, its server channel, and
// how many channels were made on it (each identifies anew).
type discordFake struct {
	t      *testing.T
	fake   *discordtest.Server
	shared string
	made   atomic.Int32
}

// users are the people of the suite, by id.
var users = map[string]discordtest.User{person.ID: person, stranger.ID: stranger}

// channel makes the Discord channel on the fake, allowing person.
func (f *discordFake) channel() channel.Channel {
	d, err := discord.New(discord.Config{BotToken: f.fake.Token(), Allowed: []string{person.ID}, APIURL: f.fake.URL,
		CDNURLs: []string{f.fake.URL + "/attachments/"}}, zerolog.New(zerolog.NewTestWriter(f.t)))
	if err != nil {
		f.t.Fatal(err)
	}
	f.made.Add(1)
	return d
}

func (f *discordFake) direct(id string) string { return f.fake.DM(users[id]) }

// write is who's message arriving on the gateway, once the channel made
// last identified: in a DM as it is, in the server's channel mentioning
// the bot. Discord may dispatch an event again (a RESUME replays the
// events after the last sequence the bot acknowledged), the same message.
func (f *discordFake) write(t *testing.T, who, conversation, text string) func() {
	t.Helper()
	natstest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if !f.fake.Connected() || f.fake.Gateway().Identifies < int(f.made.Load()) {
			return errors.New("the channel is not on the gateway yet")
		}
		return nil
	})
	m := discordtest.Message{ChannelID: conversation, Author: users[who], Content: text}
	if conversation == f.shared {
		m.Content, m.Mentions = "<@"+f.fake.Bot.ID+"> "+text, []discordtest.User{f.fake.Bot}
	}
	m, err := f.fake.UserMessage(m)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := f.fake.Dispatch("MESSAGE_CREATE", m); err != nil {
			t.Fatal(err)
		}
	}
}

// press is who pressing the button of choice under m.
func (f *discordFake) press(t *testing.T, who string, m channeltest.Sent, choice string) {
	t.Helper()
	if _, err := f.fake.Press(m.Conversation, m.ID, users[who], choice); err != nil {
		t.Fatal(err)
	}
}

// spoof: Discord's messages come over the gateway, a connection the
// channel opens to Discord with its token, and Discord sets each
// message's author. A webhook or another bot named as the person is its
// own author (and the channel drops bots' and webhooks' messages).
func spoof(*testing.T, string) error {
	return fmt.Errorf("%w: messages come over the gateway connection the channel opens with its token, their authors set by Discord", channeltest.ErrNotPossible)
}

// hold holds the answer to the bot's next message with text in it.
func (f *discordFake) hold(text string) {
	f.fake.Hold(func(m discordtest.Message) bool { return strings.Contains(m.Content, text) })
}

// sent are the bot's messages in the suite's conversations, as they
// stand, with the edits each had (PATCHes answered 2xx).
func (f *discordFake) sent() []channeltest.Sent {
	edits := map[string]int{}
	for _, r := range f.fake.Sent("PATCH /channels/{channel}/messages/{message}") {
		edits[r.Path[strings.LastIndex(r.Path, "/")+1:]]++
	}
	var out []channeltest.Sent
	for _, ch := range []string{f.shared, f.direct(person.ID), f.direct(stranger.ID)} {
		for _, m := range f.fake.Messages(ch) {
			if m.Author.ID != f.fake.Bot.ID {
				continue
			}
			s := channeltest.Sent{Conversation: ch, ID: m.ID, Text: m.Content, Edits: edits[m.ID]}
			for _, row := range m.Components {
				for _, b := range row.Components {
					s.Choices = append(s.Choices, b.CustomID)
				}
			}
			out = append(out, s)
		}
	}
	return out
}
