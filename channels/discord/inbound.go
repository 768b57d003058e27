package discord

import (
	"context"
	"errors"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/textslash/textslash/channel"

	"github.com/bwmarrin/discordgo"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// publishing is how long, and how often, a message taken from the
// gateway is tried when JetStream does not store it (a NATS reconnect, a
// stream leader moving): the gateway does not give an event again, so the
// message is lost once publishing gives up. Events are handled one at a
// time (SyncEvents), so while one waits the later ones wait behind it in
// the connection, in order. The wait stays under discordgo's
// dead-connection bound (5 heartbeat intervals, 206 s at Discord's 41.25
// s): blocked longer, discordgo would stop reading heartbeat ACKs and
// reconnect. A button press must be answered within 3 s, so its
// publishing stops after pressWithin and the person is asked to press
// again.
var publishing = backoff{first: 200 * time.Millisecond, max: 10 * time.Second, within: 2 * time.Minute}

const pressWithin = 2 * time.Second

// backoff: waits from first, doubled up to max, for at most within in all.
type backoff struct {
	first, max, within time.Duration
}

// onMessage publishes a person's message: any in a DM, in a server only
// one that mentions the bot (the mention taken out of the text). Bots'
// messages (the bot's own too), webhooks' and system messages are not
// people's. Its dedupe id is the message id, the same when Discord
// delivers the event again.
func (d *Discord) onMessage(ctx context.Context, m *discordgo.MessageCreate) {
	if m.Author == nil || m.Author.Bot || m.Author.System || m.WebhookID != "" ||
		(m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply) {
		return
	}
	log := d.log.With().Str("message_id", m.ID).Str("channel_id", m.ChannelID).Str("guild_id", m.GuildID).Logger()
	text := m.Content
	if m.GuildID != "" {
		bot, err := d.botID(ctx)
		if err != nil {
			log.Error().Err(err).Msg("discord bot id unknown; a server message could not be checked for a mention")
			return
		}
		if !mentions(m.Mentions, bot) {
			return
		}
		text = withoutMention(text, bot)
	}
	u, err := contract.NewUser(Channel, m.Author.ID)
	if err != nil {
		log.Warn().Str("author_id", m.Author.ID).Msg("discord user id unusable; ignored")
		return
	}
	log = log.With().Str("user", u.Key()).Logger()
	// The id says where it was written: the reply goes there (channelOf).
	in := contract.Inbound{ID: m.ChannelID + "-" + m.ID, User: u, Text: text, Media: media(m.Message), At: m.Timestamp.UTC()}
	switch err := d.publishRetry(ctx, log, in); {
	case errors.Is(err, channel.ErrNotAllowed):
		log.Info().Int("text_len", len(text)).Msg("discord message from a person neither allowed nor paired in; dropped")
	case err != nil:
		log.Error().Err(err).Int("text_len", len(text)).Msg("discord message not stored; lost")
	default:
		d.answerIn(u, m.ChannelID)
	}
}

// mentions reports whether the bot is among a message's mentions.
func mentions(users []*discordgo.User, bot string) bool {
	for _, u := range users {
		if u != nil && u.ID == bot {
			return true
		}
	}
	return false
}

// withoutMention is text without the bot's mentions (<@id>, <@!id>).
func withoutMention(text, bot string) string {
	text = strings.ReplaceAll(text, "<@!"+bot+">", "")
	text = strings.ReplaceAll(text, "<@"+bot+">", "")
	return strings.TrimSpace(text)
}

// media are a message's attachments, fetched later with their (signed)
// URLs through Fetch. A voice message's one attachment is a voice note.
func media(m *discordgo.Message) []contract.Media {
	var out []contract.Media
	for _, a := range m.Attachments {
		if a == nil || a.URL == "" {
			continue
		}
		ct := a.ContentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		out = append(out, contract.Media{URL: a.URL, ContentType: ct, Name: a.Filename,
			Voice: m.Flags&discordgo.MessageFlagsIsVoiceMessage != 0, Seconds: int(math.Round(a.DurationSecs))})
	}
	return out
}

// onInteraction takes the press of one of the bot's buttons as the
// person's message: its choice, its dedupe id the interaction's. Once
// stored the press is acknowledged by updating the message (the buttons
// gone, the choice shown); if it could not be stored the person is told,
// only them, to press again.
func (d *Discord) onInteraction(ctx context.Context, ic *discordgo.InteractionCreate) {
	if ic.Type != discordgo.InteractionMessageComponent {
		return
	}
	user := ic.User
	if ic.Member != nil && ic.Member.User != nil {
		user = ic.Member.User
	}
	log := d.log.With().Str("interaction_id", ic.ID).Str("channel_id", ic.ChannelID).Logger()
	choice := ic.MessageComponentData().CustomID
	u, err := contract.NewUser(Channel, userID(user))
	if err != nil || !contract.IsChoice(choice) {
		log.Info().Int("custom_id_len", len(choice)).Msg("discord button not textslash's, or from no user; acknowledged, ignored")
		d.respond(log, ic, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
		return
	}
	log = log.With().Str("user", u.Key()).Str("choice", choice).Logger()
	pctx, cancel := context.WithTimeout(ctx, pressWithin)
	defer cancel()
	err = d.publishRetry(pctx, log, contract.Inbound{ID: ic.ChannelID + "-" + ic.ID, User: u, Text: choice, At: time.Now().UTC()})
	switch {
	case errors.Is(err, channel.ErrNotAllowed):
		// Acknowledged without a change, so that Discord shows the
		// stranger no error; the buttons stay for their person.
		log.Info().Msg("discord button pressed by a person neither allowed nor paired in; acknowledged, dropped")
		d.respond(log, ic, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
		return
	case err != nil:
		log.Error().Err(err).Msg("discord button press not stored; the person is asked to press again")
		d.respond(log, ic, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: msgPressAgain, Flags: discordgo.MessageFlagsEphemeral}})
		return
	}
	d.answerIn(u, ic.ChannelID)
	d.respond(log, ic, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage, Data: answered(ic.Message, choice)})
}

// msgPressAgain tells a person their press was not taken.
const msgPressAgain = "That did not go through; press the button again."

// answered is the message whose button was pressed, its buttons gone and
// the choice shown under its text when it fits.
func answered(m *discordgo.Message, choice string) *discordgo.InteractionResponseData {
	data := &discordgo.InteractionResponseData{Components: []discordgo.MessageComponent{}}
	if m != nil {
		data.Content = m.Content
		if text := m.Content + "\n\n→ " + label(choice); utf8.RuneCountInString(text) <= BodyLimit {
			data.Content = text
		}
	}
	return data
}

func userID(u *discordgo.User) string {
	if u == nil {
		return ""
	}
	return u.ID
}

// respond answers an interaction; a failure is logged (the press is stored).
func (d *Discord) respond(log zerolog.Logger, ic *discordgo.InteractionCreate, r *discordgo.InteractionResponse) {
	if err := d.s.InteractionRespond(ic.Interaction, r); err != nil {
		log.Warn().Err(err).Int("response_type", int(r.Type)).Msg("discord interaction not answered")
	}
}

// publishRetry publishes in with the kit, trying again with backoff
// (publishing) while ctx lasts; not after a refusal of the message itself
// (a stranger's: channel.ErrNotAllowed; a bad user or payload).
func (d *Discord) publishRetry(ctx context.Context, log zerolog.Logger, in contract.Inbound) error {
	ctx, cancel := context.WithTimeout(ctx, publishing.within)
	defer cancel()
	wait := publishing.first
	for try := 1; ; try++ {
		err := d.host.Publish(ctx, in)
		if err == nil || errors.Is(err, channel.ErrNotAllowed) || errors.Is(err, contract.ErrInvalidUser) || errors.Is(err, contract.ErrInvalidPayload) {
			return err
		}
		log.Warn().Err(err).Int("try", try).Dur("wait_ms", wait).Msg("discord message not stored yet; trying again")
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, publishing.max)
	}
}

// answerIn notes the channel a person last wrote in, where they are
// answered from now on (not kept across restarts: a DM until they write).
func (d *Discord) answerIn(u contract.User, channel string) {
	if channel == "" {
		return
	}
	d.places.Wrote(u.ID, channel)
}
