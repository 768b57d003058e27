package slack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"
	api "github.com/slack-go/slack"

	"github.com/textslash/textslash/contract"
)

// Sender delivers textslash's messages to Slack with one Web API call
// each (a file upload: one share after the files' bytes): a text
// (chat.postMessage), the run's progress edited in one status message
// (chat.update), images and files uploaded and shared with the text
// (files.completeUploadExternal), and a message's choices as Block Kit
// buttons whose press comes back as the person's message.
//
// Long replies come in pages with MORE, like every channel's (egress pages
// them at Rules' BodyLimit), rather than in a thread: each page is then one
// Send, recorded once by egress's ledger, so a rate limit or a crash in the
// middle of a long reply repeats or loses no part of it, where a thread is
// several posts within one Send; and the person reads a reply where they
// asked, not folded under it.
//
// Failures are *channel.SendError: Slack's 429 with its Retry-After;
// errors Slack calls its own (internal_error, a 5xx) and the network's
// are tried again; every other refusal is Permanent. Texts are posted with
// metadata naming a digest of the message, by which Find looks them up.
type Sender struct {
	client *api.Client
	log    zerolog.Logger
	places *channel.Places
}

var (
	_ channel.Sender = (*Sender)(nil)
	_ channel.Finder = (*Sender)(nil)
)

// Send implements channel.Sender; the id returned is the message's ts (a
// file share's: its first file's id).
func (s *Sender) Send(ctx context.Context, u contract.User, m channel.Message) (string, error) {
	ch, err := s.conversation(ctx, u, m.JobID)
	if err != nil {
		return "", sendError(err)
	}
	switch {
	case m.Progress:
		return s.progress(ctx, ch, m)
	case len(m.Media) > 0:
		return s.upload(ctx, u, ch, m)
	}
	_, ts, err := s.client.PostMessageContext(ctx, ch, s.content(u, ch, m)...)
	if err != nil {
		return "", sendError(err)
	}
	return ts, nil
}

// conversation is where u's message about job goes: the conversation the
// job came from (a job's id is its message's, <conversation>-<ts>), else
// the one u last wrote in, else their direct message with the bot
// (conversations.open, once).
func (s *Sender) conversation(ctx context.Context, u contract.User, job string) (string, error) {
	return s.places.Conversation(ctx, u.ID, conversationOf(job), func(ctx context.Context) (string, error) {
		c, _, _, err := s.client.OpenConversationContext(ctx, &api.OpenConversationParameters{Users: []string{u.ID}})
		if err != nil {
			return "", err
		}
		return c.ID, nil
	})
}

// text is m's text for u in ch: escaped, and mentioning u outside direct
// messages (but in progress lines).
func text(u contract.User, ch string, m channel.Message) string {
	t := escape(m.Body)
	if !isDM(ch) && !m.Progress && t != "" {
		t = "<@" + u.ID + "> " + t
	}
	return t
}

// content is m as chat.postMessage's options: its text, its choices as
// buttons, and the metadata Find looks for.
func (s *Sender) content(u contract.User, ch string, m channel.Message) []api.MsgOption {
	t := text(u, ch, m)
	opts := []api.MsgOption{api.MsgOptionText(t, false), api.MsgOptionDisableLinkUnfurl(), api.MsgOptionMetadata(metadata(m))}
	if len(m.Choices) > 0 {
		opts = append(opts, api.MsgOptionBlocks(blocks(t, m.Choices)...))
	}
	return opts
}

// metaType is the event_type of the metadata of textslash's messages.
const metaType = "textslash_message"

// metadata names m's digest.
func metadata(m channel.Message) api.SlackMetadata {
	return api.SlackMetadata{EventType: metaType, EventPayload: map[string]any{"digest": digest(m)}}
}

// digest is a short hash of everything m says.
func digest(m channel.Message) string {
	b, _ := json.Marshal(m) // a struct of strings, bools and slices of them
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// escape is text with Slack's three control characters escaped, so that
// an agent's "<" is shown, not taken for a link or a mention.
func escape(text string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
}

// progress shows a progress line in the run's status message: posted for
// the run's first line, edited for the next ones (posted anew when the
// status message is gone).
func (s *Sender) progress(ctx context.Context, ch string, m channel.Message) (string, error) {
	return s.places.Progress(ctx, ch, m.JobID, m.Body, func(ctx context.Context) (string, error) {
		_, ts, err := s.client.PostMessageContext(ctx, ch, s.content(contract.User{}, ch, m)...)
		if err != nil {
			return "", sendError(err)
		}
		return ts, nil
	}, func(ctx context.Context, ts string) error {
		_, _, _, err := s.client.UpdateMessageContext(ctx, ch, ts, api.MsgOptionText(escape(m.Body), false))
		var se api.SlackErrorResponse
		if errors.As(err, &se) && (se.Err == "message_not_found" || se.Err == "cant_update_message") {
			return channel.ErrGone
		}
		if err != nil {
			return sendError(err)
		}
		return nil
	})
}
