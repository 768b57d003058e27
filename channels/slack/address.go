package slack

import (
	"regexp"
	"strings"
)

// Channel is the channel's name in subjects and users.
const Channel = "slack"

// A person on Slack is their Slack user id: contract.User{Channel:
// "slack", ID: "U123"}, whom the allowlist (SLACK_ALLOWED) and pairing
// know. They write to the bot in a direct message or by mentioning it in a
// channel; what textslash sends them about a job goes to the conversation
// the job came from (its id, the message's, is <conversation>-<ts>), and
// anything else to the conversation they last wrote in (mentioning them
// there when it is a channel), or to their direct message with the bot
// when this process has not seen them write. Slack's ids are capitals and
// digits, safe as subject tokens.

// conversationRE is a Slack conversation id: a channel's (C…), a private
// one's (G…) or a direct message's (D…).
var conversationRE = regexp.MustCompile(`^[CDG][A-Z0-9]{1,30}$`)

// conversationOf is the conversation a job came from, "" when its id does
// not say (a scheduled task's, a notice's).
func conversationOf(job string) string {
	ch, _, ok := strings.Cut(job, "-")
	if !ok || !conversationRE.MatchString(ch) {
		return ""
	}
	return ch
}

// isDM reports whether a conversation id is a direct message's (D…).
func isDM(channel string) bool { return strings.HasPrefix(channel, "D") }
