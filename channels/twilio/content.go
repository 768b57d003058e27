package twilio

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"
	content "github.com/twilio/twilio-go/rest/content/v1"

	"github.com/textslash/textslash/contract/pages"
)

// WhatsApp quick replies: a message's choices as buttons, whose press
// comes back as the person's message (ButtonPayload: the choice). Within
// the 24-hour window Twilio sends a twilio/quick-reply content without
// template approval; textslash makes one content per choice set, its body
// a variable, and sends each message with it by ContentSid.

// WhatsApp's limits on a quick reply.
const (
	quickReplyBodyLimit  = 1024
	quickReplyMaxButtons = 3
	quickReplyTitleLimit = 20
)

// quickReplyPrefix starts the friendly names of textslash's contents
// ("textslash_quick_reply_v1_yes_no_always"); a new version of their
// definition takes a new prefix, so old contents are not reused.
const quickReplyPrefix = "textslash_quick_reply_v1_"

// codeContentSid: Twilio does not know the ContentSid (the content was
// deleted).
const codeContentSid = 21655

// sendWithButtons sends m with its choices as quick-reply buttons. The
// quick reply carries m's text when it can (no images, at most 1,024
// characters); otherwise m goes as it is, followed by a short quick reply
// ("Reply approve or reject."). When the Content API fails or Twilio
// refuses the quick reply, m goes as plain text, as on a channel without
// buttons: its text says what to reply.
func (s *sender) sendWithButtons(log *zerolog.Logger, to string, m channel.Message) (string, error) {
	if len(m.Media) > 0 || pages.Length(m.Body) > quickReplyBodyLimit {
		id, err := s.create(s.params(to, m))
		if err != nil {
			return "", err
		}
		qid, err := s.quickReply(to, replyPrompt(m.Choices), m.Choices)
		if err != nil {
			// Twilio took the message, which names the replies: sending it
			// again for want of buttons would repeat it.
			log.Warn().Err(err).Msg("quick reply after the message not sent; it was sent as text")
			return id, nil
		}
		return qid, nil
	}
	id, err := s.quickReply(to, m.Body, m.Choices)
	var se *channel.SendError
	if err == nil || errors.As(err, &se) && !se.Permanent {
		return id, err // a failure that may pass is tried again, buttons and all
	}
	log.Warn().Err(err).Msg("quick reply not sent; sending the message as text")
	return s.create(s.params(to, m))
}

// quickReply sends body with buttons for choices. A failure of Twilio's
// message create is a *SendError; one of the Content API is not.
func (s *sender) quickReply(to, body string, choices []string) (string, error) {
	sid, err := s.quick.sid(s.api.ContentV1, choices)
	if err != nil {
		return "", err
	}
	vars, _ := json.Marshal(map[string]string{"1": body})
	p := s.params(to, channel.Message{})
	p.SetContentSid(sid).SetContentVariables(string(vars))
	id, err := s.create(p)
	if se := (*channel.SendError)(nil); errors.As(err, &se) && se.Code == codeContentSid {
		s.quick.forget(choices)
	}
	return id, err
}

// quickReplies are the contents of the choice sets sent so far, by
// friendly name, from the account's contents at first use: a restarted
// textslash finds the ones it made before rather than make more.
type quickReplies struct {
	mu     sync.Mutex // held across the Content API's calls: a set is created once
	listed bool
	sids   map[string]string
}

// sid returns the content of choices: known, found among the account's
// contents, or created.
func (q *quickReplies) sid(api *content.ApiService, choices []string) (string, error) {
	name := quickReplyName(choices)
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.listed {
		all, err := api.ListContent(nil)
		if err != nil {
			return "", fmt.Errorf("list contents: %w", err)
		}
		q.sids = map[string]string{}
		for _, c := range all {
			if c.Sid != nil && c.FriendlyName != nil && strings.HasPrefix(*c.FriendlyName, quickReplyPrefix) {
				q.sids[*c.FriendlyName] = *c.Sid
			}
		}
		q.listed = true
	}
	if sid, ok := q.sids[name]; ok {
		return sid, nil
	}
	c, err := api.CreateContent(quickReplyContent(name, choices))
	if err != nil {
		return "", fmt.Errorf("create content %s: %w", name, err)
	}
	if c.Sid == nil {
		return "", fmt.Errorf("create content %s: no sid in Twilio's answer", name)
	}
	q.sids[name] = *c.Sid
	return *c.Sid, nil
}

// forget drops the content of choices, which Twilio no longer knows: the
// next message makes another.
func (q *quickReplies) forget(choices []string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.sids, quickReplyName(choices))
}

// quickReplyContent is a twilio/quick-reply whose body is variable 1 and
// whose buttons are the choices: titled "Yes", sending "yes".
func quickReplyContent(name string, choices []string) *content.CreateContentParams {
	actions := make([]content.QuickReplyAction, len(choices))
	for i, c := range choices {
		actions[i] = content.QuickReplyAction{Title: buttonTitle(c), Id: c}
	}
	return (&content.CreateContentParams{}).SetContentCreateRequest(content.ContentCreateRequest{
		FriendlyName: name,
		Language:     "en",
		Variables:    map[string]string{"1": replyPrompt(choices)},
		Types:        content.Types{TwilioQuickReply: &content.TwilioQuickReply{Body: "{{1}}", Actions: actions}},
	})
}

// quickReplyable reports whether WhatsApp can show choices as quick-reply
// buttons.
func quickReplyable(choices []string) bool {
	if len(choices) == 0 || len(choices) > quickReplyMaxButtons {
		return false
	}
	for _, c := range choices {
		if c == "" || utf8.RuneCountInString(c) > quickReplyTitleLimit {
			return false
		}
	}
	return true
}

// quickReplyName is the friendly name of choices' content: letters and
// digits, joined by underscores.
func quickReplyName(choices []string) string {
	clean := func(r rune) rune {
		if r < utf8.RuneSelf && (unicode.IsLower(r) || unicode.IsDigit(r)) {
			return r
		}
		return '_'
	}
	return quickReplyPrefix + strings.Map(clean, strings.ToLower(strings.Join(choices, "_")))
}

func buttonTitle(choice string) string {
	r, n := utf8.DecodeRuneInString(choice)
	return string(unicode.ToUpper(r)) + choice[n:]
}

// replyPrompt names the replies: "Reply yes, no or always."
func replyPrompt(choices []string) string {
	last := len(choices) - 1
	if last == 0 {
		return "Reply " + choices[0] + "."
	}
	return "Reply " + strings.Join(choices[:last], ", ") + " or " + choices[last] + "."
}
