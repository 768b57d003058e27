package slack

import (
	"context"
	"fmt"
	"time"

	api "github.com/slack-go/slack"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress"
)

// findPages bounds the pages of history Find reads (200 messages each).
const findPages = 5

// Find implements egress.Finder: the ts of a message like m posted to u's
// conversation since then (a file share's: its first file's id), read from
// conversations.history: a text by its metadata (every text Send posts
// names its digest); a share of files by its files' titles (their names,
// as upload gives them) and its text. "" when there is none.
func (s *Sender) Find(ctx context.Context, u contract.User, m egress.Message, since time.Time) (string, error) {
	ch, err := s.conversation(ctx, u, m.JobID)
	if err != nil {
		return "", sendError(err)
	}
	like, err := s.matcher(ctx, u, ch, m)
	if err != nil {
		return "", err
	}
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
func (s *Sender) matcher(ctx context.Context, u contract.User, ch string, m egress.Message) (func(api.Message) (string, bool), error) {
	if len(m.Media) == 0 {
		want := digest(m)
		return func(msg api.Message) (string, bool) {
			return msg.Timestamp, msg.Metadata.EventType == metaType && msg.Metadata.EventPayload["digest"] == want
		}, nil
	}
	var titles []string
	for _, ref := range m.Media {
		a, err := s.read(ctx, ref)
		if err != nil {
			return nil, err
		}
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
	}, nil
}

// ts is t as a Slack timestamp.
func ts(t time.Time) string { return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000) }
