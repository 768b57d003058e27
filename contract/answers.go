package contract

import (
	"slices"
	"strings"
)

// Answers to a permission question, carried by answer events.
const (
	AnswerAllow  = "allow"  // yes: this once
	AnswerAlways = "always" // yes, and don't ask again for this tool (Bash: this command prefix) in this session
	AnswerDeny   = "deny"   // no; the event's Text is what the agent is told
)

// Replies that answer a permission question: what its buttons send, and
// the words ParseAnswer reads first.
const (
	ReplyYes    = "yes"
	ReplyNo     = "no"
	ReplyAlways = AnswerAlways
)

// QuestionChoices are the replies to a permission question, in the order
// its buttons show them (Event.Choices of a KindQuestion event).
var QuestionChoices = []string{ReplyYes, ReplyNo, ReplyAlways}

// ApprovalChoices are the replies to an approval request, in the order its
// buttons show them.
var ApprovalChoices = []string{ActionApprove, ActionReject}

// IsChoice reports whether reply is one that textslash's buttons send: a
// permission question's or an approval request's. A channel whose buttons
// may be titled otherwise takes the reply, not the title, when it is one.
func IsChoice(reply string) bool {
	return slices.Contains(QuestionChoices, reply) || slices.Contains(ApprovalChoices, reply)
}

// QuestionPrompt ends every permission question: the replies that answer
// it, and what any other reply does (a question may wait far up the
// conversation when the person writes next).
const QuestionPrompt = "Reply yes, no or always (any other reply says no and is passed on as an instruction)."

// What the agent is told with an AnswerDeny the person gave no words for.
const (
	// DeniedNo: the person replied no, and nothing more.
	DeniedNo = "The person said no."
	// DeniedNoAnswer: nobody answered before the question's time ran out.
	DeniedNoAnswer = "The person did not answer in time, so this was not allowed."
	// DeniedNobody: the question could not be asked.
	DeniedNobody = "Nobody can be asked for permission now, so this was not allowed."
	// DeniedStopped: the run ended while the question waited.
	DeniedStopped = "The run was stopped."
)

// ParseAnswer reads the person's reply to a permission question: yes
// (AnswerAllow), always (AnswerAlways) or no (AnswerDeny), as
// QuestionPrompt tells them; anything else is a no whose text the agent is
// told ("no, use pnpm" tells it "use pnpm").
func ParseAnswer(text string) (answer, reason string) {
	t := strings.TrimSpace(text)
	word, rest, _ := strings.Cut(t, " ")
	word = strings.ToLower(strings.TrimRight(word, ".,!:;"))
	rest = strings.TrimSpace(rest)
	switch word {
	case ReplyYes, "y", "ok", "okay", "allow", "sure":
		if rest == "" {
			return AnswerAllow, ""
		}
	case ReplyAlways:
		if rest == "" {
			return AnswerAlways, ""
		}
	case ReplyNo, "n", "deny", "nope":
		return AnswerDeny, rest
	}
	return AnswerDeny, t
}
