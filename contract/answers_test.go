package contract_test

import (
	"testing"

	"github.com/textslash/textslash/contract"
)

func TestParseAnswer(t *testing.T) {
	for _, c := range []struct{ in, answer, reason string }{
		{"yes", contract.AnswerAllow, ""}, {" Yes. ", contract.AnswerAllow, ""}, {"y", contract.AnswerAllow, ""}, {"OK", contract.AnswerAllow, ""},
		{"always", contract.AnswerAlways, ""}, {"ALWAYS!", contract.AnswerAlways, ""},
		{"no", contract.AnswerDeny, ""}, {"No.", contract.AnswerDeny, ""}, {"no, use pnpm", contract.AnswerDeny, "use pnpm"},
		{"no use pnpm", contract.AnswerDeny, "use pnpm"}, {"nope: not now", contract.AnswerDeny, "not now"},
		// Anything else is no, and what the person said is what Claude is told.
		{"use pnpm instead", contract.AnswerDeny, "use pnpm instead"}, {"yes but use pnpm", contract.AnswerDeny, "yes but use pnpm"},
		{"always do that", contract.AnswerDeny, "always do that"}, {"yesterday", contract.AnswerDeny, "yesterday"},
	} {
		a, r := contract.ParseAnswer(c.in)
		if a != c.answer || r != c.reason {
			t.Errorf("ParseAnswer(%q) = %q, %q; want %q, %q", c.in, a, r, c.answer, c.reason)
		}
	}
}

// TestChoicesAnswer: every button's reply reads as the answer it names,
// and IsChoice knows exactly the buttons' replies.
func TestChoicesAnswer(t *testing.T) {
	want := map[string]string{contract.ReplyYes: contract.AnswerAllow, contract.ReplyNo: contract.AnswerDeny, contract.ReplyAlways: contract.AnswerAlways}
	for _, c := range contract.QuestionChoices {
		if a, r := contract.ParseAnswer(c); a != want[c] || r != "" {
			t.Errorf("ParseAnswer(%q) = %q, %q; want %q, \"\"", c, a, r, want[c])
		}
	}
	for _, c := range []struct {
		reply string
		want  bool
	}{{"yes", true}, {"no", true}, {"always", true}, {"approve", true}, {"reject", true},
		{"Yes", false}, {"ok", false}, {"", false}, {"cancel", false}} {
		if got := contract.IsChoice(c.reply); got != c.want {
			t.Errorf("IsChoice(%q) = %v; want %v", c.reply, got, c.want)
		}
	}
}
