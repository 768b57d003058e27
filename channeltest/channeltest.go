// Package channeltest is the conformance suite every channel written on
// the port (channel.Channel) runs: one set of cases, each a subtest, that
// drives the channel against its fake provider through the fake's real
// inbound path, with its runtime (the kit, or ingress and egress for a built-in
// channel: RunBuiltIn) on a real embedded JetStream. The suite plays
// the dispatcher's and the runner's part only through NATS (it reads the
// IN stream and publishes events), never through the channel's insides,
// so a case says what a person on that channel sees.
//
// A channel's test gives a Provider (what its fake can do) and calls Run:
//
//	func TestConformance(t *testing.T) {
//		channeltest.Run(t, func(t *testing.T) channeltest.Provider { … })
//	}
//
// A case the channel cannot take (no buttons, no conversations but
// people's direct ones, no Finder) is skipped with the reason.
package channeltest

import (
	"errors"
	"net/http"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/channel"
)

// Provider is a channel made against its fake provider, and what the
// fake lets a test do. Required: Channel, Person, Stranger, Direct,
// Write, Sent. The others are nil (or empty) where the channel or its
// fake cannot, and the cases that need them are skipped.
type Provider struct {
	// Channel makes the channel against the fake, allowing Person only.
	// It is called once for each start of the runtime: again after a
	// restart, as a new process would make it.
	Channel func() channel.Channel
	// JetStream, when set, is handed the suite's JetStream before Channel
	// is first called: for a channel that reads it itself (the web chat
	// stores files and streams events from it).
	JetStream func(js jetstream.JetStream)
	// Person is the provider's id of the one person allowed; Stranger,
	// of someone neither allowed nor paired in.
	Person, Stranger string
	// Direct is a person's direct conversation with the bot, as the fake
	// names it (Sent.Conversation).
	Direct func(person string) string
	// Shared is a conversation other than anyone's direct one where
	// people write to the bot (a Slack channel, a Discord server's
	// channel); "" when the channel has none.
	Shared string
	// Write has who write text in conversation (Shared, or Direct(who))
	// through the fake's real inbound path, and returns once the fake
	// has handed it to the channel (for a fake that waits, once the
	// channel answered). again delivers the same provider message once
	// more, as the provider does when its delivery's answer was lost; nil
	// when the provider never delivers a message twice.
	Write func(t *testing.T, who, conversation, text string) (again func())
	// Press has who press the button of choice under the bot's message m;
	// nil when the channel shows no buttons.
	Press func(t *testing.T, who string, m Sent, choice string)
	// Serve, for a channel.Router or a channel.Pager, is handed its routes
	// and pages (publishing with the runtime's Host) each time it starts: the
	// fake's HTTP deliveries (a browser's requests) go there. Nil for a
	// channel without routes.
	Serve func(t *testing.T, routes http.Handler)
	// Spoof sends text, claiming it is Person's, by a path the real
	// provider would not take (a request not signed by it, a message
	// forged to claim another author); the harness checks the channel's
	// answer at the transport (a 401, say). It returns an error wrapping
	// ErrNotPossible, saying why, when the channel's transport makes a
	// spoof impossible, or ErrUnguarded when the channel cannot tell one.
	Spoof func(t *testing.T, text string) error
	// Hold makes the fake take the next message sent whose text contains
	// text (it is in Sent) but never answer the send, until the channel
	// hangs up: as when the channel dies between a send and its answer.
	// Nil when the fake cannot.
	Hold func(text string)
	// Sent is every message the fake took from the bot, as it stands
	// now (edits applied).
	Sent func() []Sent
	// NoEdit, when set, says why the channel shows each progress line as
	// a message of its own rather than editing one.
	NoEdit string
}

// Sent is one message the fake provider took from the bot.
type Sent struct {
	// Conversation is where it was posted (Provider.Shared, Direct(p)).
	Conversation string
	// ID is the provider's id of the message.
	ID   string
	Text string
	// Choices are the values of its buttons, in order.
	Choices []string
	// Edits is how many times it was edited.
	Edits int
}

var (
	// ErrNotPossible is Spoof's answer when the channel's transport makes
	// a spoof impossible (a connection the channel opens to the
	// provider, whose messages name their authors as the provider knows
	// them).
	ErrNotPossible = errors.New("not possible on this channel")
	// ErrUnguarded is Spoof's answer when the channel takes whatever
	// reaches its inbound path, with nothing to tell a spoof by (a known
	// gap of the channel, skipped so that it is reported, not failed).
	ErrUnguarded = errors.New("the channel cannot tell a spoof from its provider's message")
)

// Run runs every case against a channel, with the kit as its runtime (a
// plug-in channel's): fake makes a new fake provider, and the channel on
// it, for each case.
func Run(t *testing.T, fake func(t *testing.T) Provider) {
	run(t, fake, kitRuntime)
}

// RunBuiltIn runs every case against a built-in channel with the runtime
// that runs it in textslash: ingress (its Run, webhooks, pages and
// admission) and, for a channel.Sender, egress (its pusher, with
// the reply window and delivery reports a channel says it has).
func RunBuiltIn(t *testing.T, fake func(t *testing.T) Provider) {
	run(t, fake, builtInRuntime)
}

func run(t *testing.T, fake func(t *testing.T) Provider, rt runtime) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := start(t, fake(t), rt)
			c.run(t, r)
		})
	}
}

// cases are the suite's, in order.
var cases = []struct {
	name string
	run  func(t *testing.T, r *rig)
}{
	{"StrangerDropped", strangerDropped},
	{"ReplyWhereJobCameFrom", replyWhereJobCameFrom},
	{"ProgressEditsOneMessage", progressEditsOneMessage},
	{"Buttons", buttons},
	{"NotSentTwiceAfterLostAnswer", notSentTwice},
	{"SpoofRefused", spoofRefused},
}
