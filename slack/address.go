package slack

import (
	"strings"

	"github.com/textslash/textslash/contract"
)

// Channel is the channel's name in subjects and users.
const Channel = "slack"

// A person on Slack is a Slack user in one conversation. In a direct
// message with the bot their contract.User's ID is their user id ("U123"):
// the allowlist and pairing know them by it. When they mention the bot in a
// channel, the ID is "U123-C456" (their user id, then the channel's), so
// that the reply goes back to that channel, and their work there is apart
// from their direct messages. Slack's ids are capitals and digits, safe as
// subject tokens; "-" never occurs in them.

// address is where a person is: their user id and, outside direct
// messages, the channel's id.
type address struct {
	user    string
	channel string // "" for the direct message
}

// userOf is the contract user of a.
func (a address) userOf() (contract.User, error) {
	id := a.user
	if a.channel != "" {
		id += "-" + a.channel
	}
	return contract.NewUser(Channel, id)
}

// addressOf is the address of u, a user of this channel.
func addressOf(u contract.User) address {
	user, channel, _ := strings.Cut(u.ID, "-")
	return address{user: user, channel: channel}
}

// Member is the Slack user id of u ("U123" of "U123-C456"): whom an
// allowlist of Slack user ids and pairing know.
func Member(u contract.User) string { return addressOf(u).user }

// isDM reports whether a conversation id is a direct message's (D…).
func isDM(channel string) bool { return strings.HasPrefix(channel, "D") }
