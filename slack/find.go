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
// conversation since then, read from conversations.history with its
// metadata (every text Send posts names its digest); "" when there is none.
// Files shared carry no metadata: for a message with media Find says ""
// (such a message may go out twice after a crash).
func (s *Sender) Find(ctx context.Context, u contract.User, m egress.Message, since time.Time) (string, error) {
	if len(m.Media) > 0 {
		return "", nil
	}
	ch, err := s.conversation(ctx, addressOf(u))
	if err != nil {
		return "", sendError(err)
	}
	want := digest(m)
	params := &api.GetConversationHistoryParameters{ChannelID: ch, Oldest: ts(since), IncludeAllMetadata: true, Limit: 200}
	for range findPages {
		page, err := s.client.GetConversationHistoryContext(ctx, params)
		if err != nil {
			return "", sendError(err)
		}
		for _, msg := range page.Messages {
			if msg.Metadata.EventType == metaType && msg.Metadata.EventPayload["digest"] == want {
				return msg.Timestamp, nil
			}
		}
		if !page.HasMore || page.ResponseMetaData.NextCursor == "" {
			return "", nil
		}
		params.Cursor = page.ResponseMetaData.NextCursor
	}
	return "", nil
}

// ts is t as a Slack timestamp.
func ts(t time.Time) string { return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000) }
