package slack

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"
	api "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/textslash/textslash/contract"
)

// fromEvent is the inbound message of an Events API event: a person's
// direct message to the bot (message.im) or a mention of the bot in a
// channel (app_mention), and the conversation it came in. Anything else
// (edits, the bot's own messages, joins) is not a message: ok is false.
func (s *Slack) fromEvent(inner slackevents.EventsAPIInnerEvent) (in contract.Inbound, conversation string, ok bool) {
	switch ev := inner.Data.(type) {
	case *slackevents.MessageEvent:
		if !ev.IsIM() || ev.BotID != "" || ev.User == "" || (ev.SubType != "" && ev.SubType != "file_share") {
			return in, "", false
		}
		var files []api.File
		if ev.Message != nil {
			files = ev.Message.Files
		}
		in, ok = s.inbound(ev.User, ev.Channel, ev.TimeStamp, ev.Text, files)
		return in, ev.Channel, ok
	case *slackevents.AppMentionEvent:
		// A mention in a direct message comes as a message.im too.
		if ev.BotID != "" || ev.User == "" || isDM(ev.Channel) {
			return in, "", false
		}
		in, ok = s.inbound(ev.User, ev.Channel, ev.TimeStamp, ev.Text, ev.Files)
		return in, ev.Channel, ok
	}
	return in, "", false
}

// inbound is user's message in channel: its id the conversation's and the
// message's ts (Slack's retries of the event have the same), its text
// without the bot's mention, its files as media.
func (s *Slack) inbound(user, channel, ts, text string, files []api.File) (contract.Inbound, bool) {
	u, err := contract.NewUser(Channel, user)
	if err != nil || ts == "" || channel == "" {
		s.log.Warn().Str("slack_user", user).Str("conversation", channel).Msg("slack message without a usable user, conversation or ts; ignored")
		return contract.Inbound{}, false
	}
	in := contract.Inbound{ID: channel + "-" + strings.ReplaceAll(ts, ".", "_"), User: u, Text: s.withoutMention(text), At: tsTime(ts)}
	for _, f := range files {
		if m, ok := media(f); ok {
			in.Media = append(in.Media, m)
		}
	}
	return in, in.Text != "" || len(in.Media) > 0
}

// media is a file a person shared, fetched later with Fetch: an audio clip
// (Slack shows it as audio: media_display_type "audio", subtype
// "slack_audio"), or any audio file, is a voice note.
func media(f api.File) (contract.Media, bool) {
	link := f.URLPrivateDownload
	if link == "" {
		link = f.URLPrivate
	}
	ct := f.Mimetype
	if ct == "" {
		ct = "application/octet-stream"
	}
	m := contract.Media{URL: link, ContentType: ct, Name: f.Name, Seconds: f.DurationMs / 1000}
	m.Voice = f.MediaDisplayType == "audio" || strings.HasPrefix(ct, "audio/")
	return m, link != ""
}

// mentionRE is a mention of someone in a message's text: <@U123>.
var mentionRE = regexp.MustCompile(`<@[UW][A-Z0-9]+>`)

// withoutMention is text without the bot's mentions (any mention at its
// start before Run learned who the bot is), trimmed.
func (s *Slack) withoutMention(text string) string {
	if bot := s.botUser.Load(); bot != nil {
		return strings.TrimSpace(strings.ReplaceAll(text, "<@"+*bot+">", ""))
	}
	text = strings.TrimSpace(text)
	if loc := mentionRE.FindStringIndex(text); loc != nil && loc[0] == 0 {
		text = strings.TrimSpace(text[loc[1]:])
	}
	return text
}

// tsTime is the time of a Slack timestamp ("1712345678.000100").
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000).UTC()
}

// fromPress is the inbound message of a button of the bot's pressed, and
// the conversation it was pressed in: the button's choice as the person's
// message, its id the conversation's and the press's action_ts, so that a
// repeat delivery is stored once.
func (s *Slack) fromPress(cb api.InteractionCallback) (contract.Inbound, string, bool) {
	if cb.Type != api.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		return contract.Inbound{}, "", false
	}
	act := cb.ActionCallback.BlockActions[0]
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	log := s.log.With().Str("slack_user", cb.User.ID).Str("conversation", channel).Logger()
	if !strings.HasPrefix(act.ActionID, choicePrefix) || !contract.IsChoice(act.Value) {
		log.Info().Str("action_id", act.ActionID).Int("value_len", len(act.Value)).Msg("slack button that is not one of textslash's choices; ignored")
		return contract.Inbound{}, "", false
	}
	u, err := contract.NewUser(Channel, cb.User.ID)
	if err != nil || act.ActionTs == "" || channel == "" {
		log.Warn().Msg("slack button press without a usable user, conversation or action_ts; ignored")
		return contract.Inbound{}, "", false
	}
	return contract.Inbound{ID: channel + "-act-" + strings.ReplaceAll(act.ActionTs, ".", "_"), User: u, Text: act.Value, At: tsTime(act.ActionTs)}, channel, true
}

// take publishes in, which came in conversation, unless it was published
// already (Slack delivers an event again when its acknowledgement was
// lost). An error means it is not stored, and Slack should deliver it
// again; nil with stored false, that it was dropped as the kit refused it
// (a stranger's: channel.ErrNotAllowed, which retrying cannot mend). The
// person's next messages go to conversation.
func (s *Slack) take(ctx context.Context, log zerolog.Logger, in contract.Inbound, conversation string) (stored bool, err error) {
	log = log.With().Str("user", in.User.Key()).Str("job_id", in.ID).Str("conversation", conversation).Logger()
	if s.seen.has(in.ID) {
		log.Debug().Msg("slack message published before; not again")
		return true, nil
	}
	h := s.host.Load()
	if h == nil {
		log.Warn().Msg("slack message before the channel runs; Slack will deliver it again")
		return false, ErrNotRunning
	}
	err = (*h).Publish(ctx, in)
	switch {
	case errors.Is(err, channel.ErrNotAllowed):
		// Told nothing, as on every channel; SLACK_ALLOWED or a pairing
		// code lets them in.
		log.Warn().Int("text_len", len(in.Text)).Msg("slack message of someone neither allowed nor paired in; dropped")
		return false, nil
	case err != nil:
		log.Error().Err(err).Msg("slack message not stored; Slack will deliver it again")
		return false, err
	}
	s.seen.add(in.ID)
	s.places.Wrote(in.User.ID, conversation)
	log.Info().Int("text_len", len(in.Text)).Int("media", len(in.Media)).Msg("slack message in")
	return true, nil
}

// recent remembers the last ids published, at most n.
type recent struct {
	mu    sync.Mutex
	n     int
	ids   map[string]bool
	order []string
}

func newRecent(n int) *recent { return &recent{n: n, ids: map[string]bool{}} }

func (r *recent) has(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[id]
}

func (r *recent) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids[id] {
		return
	}
	r.ids[id] = true
	r.order = append(r.order, id)
	if len(r.order) > r.n {
		delete(r.ids, r.order[0])
		r.order = r.order[1:]
	}
}
