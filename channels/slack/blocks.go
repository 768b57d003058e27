package slack

import (
	"strings"

	api "github.com/slack-go/slack"

	"github.com/textslash/textslash/contract"
)

// choicePrefix starts the action_id of a choice's button ("choice-yes").
const choicePrefix = "choice-"

// sectionLimit is the most characters of a section block's text.
const sectionLimit = 3000

// blocks are a message with buttons: its text (escaped, mrkdwn) in
// sections of at most sectionLimit characters, then one row of buttons,
// one per choice, whose value is the choice. Approve and yes are primary;
// reject and no are danger.
func blocks(text string, choices []string) []api.Block {
	var out []api.Block
	for _, part := range sections(text) {
		out = append(out, api.NewSectionBlock(api.NewTextBlockObject(api.MarkdownType, part, false, false), nil, nil))
	}
	var buttons []api.BlockElement
	for _, c := range choices {
		b := api.NewButtonBlockElement(choicePrefix+c, c, api.NewTextBlockObject(api.PlainTextType, label(c), false, false))
		switch c {
		case contract.ActionApprove, contract.ReplyYes:
			b.Style = api.StylePrimary
		case contract.ActionReject, contract.ReplyNo:
			b.Style = api.StyleDanger
		}
		buttons = append(buttons, b)
	}
	return append(out, api.NewActionBlock("choices", buttons...))
}

// sections cuts text into pieces of at most sectionLimit characters,
// never inside an escape ("&amp;") and, where it can, at a line's end.
func sections(text string) []string {
	r := []rune(text)
	var out []string
	for len(r) > sectionLimit {
		cut := sectionLimit
		for i := cut - 1; i >= cut-5; i-- { // an escape is at most 5 characters
			if r[i] == ';' {
				break
			}
			if r[i] == '&' {
				cut = i
				break
			}
		}
		for i := cut - 1; i > cut/2; i-- {
			if r[i] == '\n' {
				cut = i + 1
				break
			}
		}
		out = append(out, string(r[:cut]))
		r = r[cut:]
	}
	if len(r) > 0 || len(out) == 0 {
		out = append(out, string(r))
	}
	return out
}

// label is a choice as its button shows it: "yes" is "Yes".
func label(choice string) string {
	if choice == "" {
		return ""
	}
	return strings.ToUpper(choice[:1]) + choice[1:]
}
