package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/bwmarrin/discordgo"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/pages"
)

// Send implements channel.Sender with one REST call: a message (its text,
// its media uploaded as attachments, its choices as buttons), or the
// edit of the run's progress message. The message goes to the channel
// its job came from, else the one the person last wrote in, else their
// DM. It pings nobody, whatever the
// text says (no @everyone from an agent's output), and embeds none of its
// links. A text over the
// channel's limit, which the kit's paging should have cut, is cut here
// rather than refused by Discord.
func (d *Discord) Send(ctx context.Context, u contract.User, m channel.Message) (string, error) {
	ch, err := d.channelFor(ctx, u, m.JobID)
	if err != nil {
		return "", err
	}
	if m.Progress {
		return d.progress(ctx, ch, m)
	}
	files, err := d.files(m.Attachments)
	if err != nil {
		return "", err
	}
	sent, err := d.s.ChannelMessageSendComplex(ch, &discordgo.MessageSend{
		Content: d.fit(m.Body), Components: buttons(m.Choices), Files: files, AllowedMentions: noPings(), Flags: noEmbeds,
	}, discordgo.WithContext(ctx))
	if err != nil {
		return "", sendError(err)
	}
	return sent.ID, nil
}

// fit is body cut to the channel's limit.
func (d *Discord) fit(body string) string {
	return pages.Truncate(body, d.cfg.Rules.BodyLimit, "…")
}

// noPings lets a message mention nobody.
func noPings() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// noEmbeds is SUPPRESS_EMBEDS: Discord makes no embed of a message's
// links, which its servers would fetch (a preview link would open the
// person's dev server to Discord's crawler). Every message goes with it,
// as on Slack: the preview links a message carries (Message.Links) are
// not the only ones its text can hold (a page of a long reply, a progress
// line, the status of a person's previews).
const noEmbeds = discordgo.MessageFlagsSuppressEmbeds

// buttons are one action row of a button per choice, whose custom_id is
// the choice: "approve" green, "reject" and "no" red, others blue. Nil
// without choices.
func buttons(choices []string) []discordgo.MessageComponent {
	if len(choices) == 0 {
		return nil
	}
	row := discordgo.ActionsRow{}
	for _, c := range choices {
		style := discordgo.PrimaryButton
		switch c {
		case contract.ActionApprove, contract.ReplyYes:
			style = discordgo.SuccessButton
		case contract.ActionReject, contract.ReplyNo:
			style = discordgo.DangerButton
		}
		row.Components = append(row.Components, discordgo.Button{Label: label(c), Style: style, CustomID: c})
	}
	return []discordgo.MessageComponent{row}
}

// label is a choice as its button shows it: "yes" is "Yes".
func label(choice string) string {
	if choice == "" {
		return ""
	}
	return strings.ToUpper(choice[:1]) + choice[1:]
}

// progress shows a progress line in the run's status message: sent for
// the run's first line, edited for the next ones (sent anew if the
// person deleted it).
func (d *Discord) progress(ctx context.Context, ch string, m channel.Message) (string, error) {
	body := d.fit(m.Body)
	return d.places.Progress(ctx, ch, m.JobID, body, func(ctx context.Context) (string, error) {
		sent, err := d.s.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Content: body, AllowedMentions: noPings(), Flags: noEmbeds}, discordgo.WithContext(ctx))
		if err != nil {
			return "", sendError(err)
		}
		return sent.ID, nil
	}, func(ctx context.Context, id string) error {
		_, err := d.s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: id, Channel: ch, Content: &body, AllowedMentions: noPings(), Flags: noEmbeds},
			discordgo.WithContext(ctx))
		switch {
		case isCode(err, discordgo.ErrCodeUnknownMessage):
			return channel.ErrGone
		case err != nil:
			return sendError(err)
		}
		return nil
	})
}

// Typing implements channel.Typer: "typing…" in the person's channel,
// shown for 10 s or until the bot's next message there.
func (d *Discord) Typing(ctx context.Context, u contract.User, job string) error {
	ch, err := d.channelFor(ctx, u, job)
	if err != nil {
		return err
	}
	if err := d.s.ChannelTyping(ch, discordgo.WithContext(ctx)); err != nil {
		return sendError(err)
	}
	return nil
}

// findSlack widens Find's window for the difference between Discord's
// clock and ours.
const findSlack = 5 * time.Second

// Find implements channel.Finder: among the bot's messages in the
// person's channel since then (at most the latest 50), the newest with
// m's text and as many attachments; "" when there is none. Discord keeps
// no idempotency key a crash could be matched by (a nonce is kept only
// minutes), so the text and the time are the match; a person's messages
// go out one at a time, so the newest match is the one.
func (d *Discord) Find(ctx context.Context, u contract.User, m channel.Message, since time.Time) (string, error) {
	ch, err := d.channelFor(ctx, u, m.JobID)
	if err != nil {
		return "", err
	}
	bot, err := d.botID(ctx)
	if err != nil {
		return "", sendError(err)
	}
	msgs, err := d.s.ChannelMessages(ch, 50, "", snowflakeAt(since.Add(-findSlack)), "", discordgo.WithContext(ctx))
	if err != nil {
		return "", sendError(err)
	}
	body := d.fit(m.Body)
	for _, msg := range msgs { // newest first
		if msg.Author != nil && msg.Author.ID == bot && msg.Content == body && len(msg.Attachments) == len(m.Media) {
			return msg.ID, nil
		}
	}
	return "", nil
}

// snowflakeAt is the least Discord id made at t (ids are milliseconds
// since 2015 above 22 bits), for listing messages after t.
func snowflakeAt(t time.Time) string {
	ms := t.UnixMilli() - 1420070400000
	if ms < 0 {
		ms = 0
	}
	return fmt.Sprint(ms << 22)
}

// channelFor is the channel a person is answered in about job: the one
// the job came from (a job's id is its message's, <channel>-<message>),
// else the one they last wrote in, else their DM with the bot (opened
// once, then kept).
func (d *Discord) channelFor(ctx context.Context, u contract.User, job string) (string, error) {
	return d.places.Conversation(ctx, u.ID, channelOf(job), func(ctx context.Context) (string, error) {
		dm, err := d.s.UserChannelCreate(u.ID, discordgo.WithContext(ctx))
		if err != nil {
			return "", sendError(err)
		}
		return dm.ID, nil
	})
}

// channelOf is the channel a job came from, "" when its id does not say
// (a scheduled task's, a notice's): ids of people's messages and presses
// are <channel>-<id>, both snowflakes.
func channelOf(job string) string {
	ch, id, ok := strings.Cut(job, "-")
	if !ok || !snowflake(ch) || !snowflake(id) {
		return ""
	}
	return ch
}

// snowflake reports whether s is a Discord id: digits.
func snowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// sendError classifies a failed REST call: a 429 waits its retry_after;
// requests Discord refused (400, 401, 403: a person who blocked the bot,
// 404, 413) are not tried again; anything else (5xx, the network) is.
func sendError(err error) error {
	var se *channel.SendError
	if errors.As(err, &se) {
		return se
	}
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) && rl.TooManyRequests != nil {
		return &channel.SendError{Err: err, Code: http.StatusTooManyRequests, Status: http.StatusTooManyRequests, RetryAfter: rl.RetryAfter}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		status, code := re.Response.StatusCode, status0(re)
		switch status {
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestEntityTooLarge:
			return &channel.SendError{Err: err, Permanent: true, Code: code, Status: status}
		}
		return &channel.SendError{Err: err, Code: code, Status: status}
	}
	return &channel.SendError{Err: err}
}

// status0 is a REST error's Discord code (50007…), 0 when it has none.
func status0(re *discordgo.RESTError) int {
	if re.Message == nil {
		return 0
	}
	return re.Message.Code
}

// isCode reports whether err is Discord's refusal with code.
func isCode(err error, code int) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Message != nil && re.Message.Code == code
}
