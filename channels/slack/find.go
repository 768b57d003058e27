package slack

import (
	"context"
	"fmt"
	"time"

	"github.com/textslash/textslash/channel"

	api "github.com/slack-go/slack"

	"github.com/textslash/textslash/contract"
)

// findPages bounds the pages of history Find reads (200 messages each).
const findPages = 5

// Find implements channel.Finder: the ts of a message like m posted to u's
// conversation since then (a file share's: its first file's id), read from
// conversations.history: a text by its metadata (every text Send posts
// names its digest); a share of files by its files' titles (their names,
// as upload gives them) and its text. "" when there is none.
func (s *Sender) Find(ctx context.Context, u contract.User, m channel.Message, since time.Time) (string, error) {
	ch, err := s.conversation(ctx, u, m.JobID)
	if err != nil {
		return "", sendError(err)
	}
	like := matcher(u, ch, m)
	params := &api.GetConversationHistoryParameters{ChannelID: ch, Oldest: ts(since), IncludeAllMetadata: true, Limit: 200}
	for range findPages {
		page, err := s.client.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return "", sendError(err)
		}
		for _, msg := range page.Messages {
			if id, ok := like(msg); ok {
				return id, nil
			}
		}
		if !page.HasMore || page.ResponseMetaData.NextCursor == "" {
			return "", nil
		}
		params.Cursor = page.ResponseMetaData.NextCursor
	}
	return "", nil
}

// matcher is whether a message of the history is m sent to u in ch, and
// its id as Send returned it.
func matcher(u contract.User, ch string, m channel.Message) func(api.Message) (string, bool) {
	if len(m.Media) == 0 {
		want := digest(m)
		return func(msg api.Message) (string, bool) {
			return msg.Timestamp, msg.Metadata.EventType == metaType && msg.Metadata.EventPayload["digest"] == want
		}
	}
	var titles []string
	for _, a := range m.Attachments {
		titles = append(titles, a.Name)
	}
	comment := text(u, ch, m)
	return func(msg api.Message) (string, bool) {
		if len(msg.Files) != len(titles) || (len(m.Choices) == 0 && msg.Text != comment) {
			return "", false
		}
		for i, f := range msg.Files {
			if f.Title != titles[i] {
				return "", false
			}
		}
		return msg.Files[0].ID, true
	}
}

// ts is t as a Slack timestamp.
func ts(t time.Time) string { return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000) }
