package ingress

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/textslash/textslash/channel"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// Telegram configures the Telegram bot: how its updates come in (a
// webhook at an https PublicURL, else polling) and who may talk.
type Telegram struct {
	// BotToken receives the updates and fetches the files people send.
	BotToken string
	// PublicURL, when https, is where Telegram reaches ingress: at start
	// ingress sets the bot's webhook to PublicURL+TelegramPath with Secret.
	// Empty (or http, which Telegram refuses for webhooks), ingress polls
	// for the updates instead (getUpdates): no public URL needed.
	PublicURL string
	// Secret is the webhook's secret_token: Telegram sends it in
	// X-Telegram-Bot-Api-Secret-Token with every update. Required with an
	// https PublicURL; without one, the webhook is served only when set.
	Secret string
	// Allowed are the chat ids that may talk to the agent.
	Allowed []string
	// APIURL replaces https://api.telegram.org.
	APIURL string
	// PollTimeout is how long one getUpdates waits for an update before
	// it comes back empty (whole seconds; 25s when zero). A poller's lease
	// lasts PollTimeout+pollLeaseMargin.
	PollTimeout time.Duration
	// Poller names this ingress among those that may poll the bot (one
	// polls at a time); the host name when empty. A restart under the same
	// name resumes at once; under another, after the last lease ends.
	Poller string
}

// TelegramPath is where Telegram posts updates.
const TelegramPath = "/telegram/webhook"

// telegramFile is the scheme of a photo's media URL in an inbound event:
// telegram:<file_id>, fetched by the media fetch service with getFile.
const telegramFile = "telegram:"

// withDefaults is t with the API's URL set when left empty, without a
// trailing slash.
func (t Telegram) withDefaults() Telegram {
	if t.APIURL == "" {
		t.APIURL = "https://api.telegram.org"
	}
	t.APIURL = strings.TrimSuffix(t.APIURL, "/")
	t.PublicURL = strings.TrimSuffix(t.PublicURL, "/")
	if t.PollTimeout == 0 {
		t.PollTimeout = 25 * time.Second
	}
	if t.Poller == "" {
		t.Poller, _ = os.Hostname()
	}
	return t
}

// webhook reports whether Telegram posts the updates (an https PublicURL)
// rather than ingress polling for them.
func (t Telegram) webhook() bool { return strings.HasPrefix(t.PublicURL, "https://") }

// validate refuses each bad setting of t, the missing ones all at once.
func (t Telegram) validate() error {
	var errs []error
	if t.BotToken == "" {
		errs = append(errs, bad("Telegram.BotToken", nil, "required for Telegram"))
	}
	switch {
	case t.Secret == "" && t.webhook():
		errs = append(errs, bad("Telegram.Secret", nil, "required with an https Telegram.PublicURL (16 or more letters, digits, _ or -): the webhook's secret_token"))
	case t.Secret != "" && !secretRE.MatchString(t.Secret):
		errs = append(errs, bad("Telegram.Secret", nil, "must have 16 to 256 characters, letters, digits, _ or - (Telegram's secret_token)"))
	}
	if t.PollTimeout < time.Second || t.PollTimeout%time.Second != 0 {
		errs = append(errs, bad("Telegram.PollTimeout", t.PollTimeout, "must be whole seconds, at least 1s"))
	}
	if t.Poller == "" {
		errs = append(errs, bad("Telegram.Poller", nil, "empty and no host name to take"))
	}
	if len(t.Allowed) == 0 {
		errs = append(errs, bad("Telegram.Allowed", nil, "empty, so nobody could use textslash; list the chat ids that may"))
	}
	for _, id := range t.Allowed {
		if _, err := strconv.ParseInt(id, 10, 64); err != nil {
			errs = append(errs, bad("Telegram.Allowed", id, "not a chat id; want a number like 4242 or -1001234567890"))
		}
	}
	if !contract.BaseURL(t.APIURL) {
		errs = append(errs, bad("Telegram.APIURL", t.APIURL, "want http(s)://host[/prefix], without a query"))
	}
	return errors.Join(errs...)
}

// secretRE is what Telegram takes as a webhook's secret_token, at least
// 16 characters long.
var secretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{16,256}$`)

// ParseList splits a comma-separated list, dropping empty items: the
// numbers or chat ids allowed, as a binary reads them.
func ParseList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// telegramWebhook takes one update Telegram posts: with the webhook's
// secret, the update as telegramUpdate takes it; 503 when it could not be
// stored, so that Telegram sends it again.
func (i *Ingress) telegramWebhook(w http.ResponseWriter, r *http.Request) {
	t := i.cfg.Telegram
	got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
	if subtle.ConstantTimeCompare([]byte(got), []byte(t.Secret)) != 1 {
		i.log.Warn().Str("remote", r.RemoteAddr).Msg("telegram update without the webhook secret; refused")
		http.Error(w, "invalid secret token", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, i.cfg.MaxBodyBytes))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	upd, err := parseUpdate(body)
	if err != nil {
		http.Error(w, "malformed update", http.StatusBadRequest)
		return
	}
	ctx, log := i.traced(r)
	if err := i.telegramUpdate(ctx, log, upd); err != nil {
		http.Error(w, "could not take the message", http.StatusServiceUnavailable)
	}
}

// parseUpdate reads one update of the Bot API, as the webhook and
// getUpdates hand them over.
func parseUpdate(data []byte) (*models.Update, error) {
	var upd models.Update
	if err := json.Unmarshal(data, &upd); err != nil {
		return nil, err
	}
	if upd.ID <= 0 {
		return nil, errors.New("no update_id")
	}
	return &upd, nil
}

// telegramUpdate takes one update from Telegram, by webhook or polling: a
// message, or the press of a button under one of the bot's messages (a
// callback query). It fails only when the update should come again: when
// IN did not store it. Telegram sends an update again until it is taken,
// so every update it should not send again is taken: those from chats not
// allowed and those that are neither.
func (i *Ingress) telegramUpdate(ctx context.Context, log zerolog.Logger, upd *models.Update) error {
	log = log.With().Int64("update_id", upd.ID).Logger()
	var in contract.Inbound
	var ok bool
	switch {
	case upd.Message != nil:
		in, ok = i.telegramMessage(ctx, log, upd.ID, upd.Message)
	case upd.CallbackQuery != nil:
		in, ok = i.telegramCallback(log, upd.CallbackQuery)
	default:
		log.Debug().Msg("telegram update is neither a new message nor a button pressed; ignored")
	}
	if !ok {
		return nil
	}
	if err := i.Publish(ctx, in); err != nil {
		log.Error().Err(err).Msg("telegram update not stored; Telegram will send it again")
		return err
	}
	if upd.CallbackQuery != nil {
		i.settleCallback(ctx, log.With().Str("user", in.User.Key()).Logger(), upd.CallbackQuery)
	}
	return nil
}

// telegramUser is the user of a chat, and whether the chat is allowed
// (listed, or paired in).
func (i *Ingress) telegramUser(log zerolog.Logger, chat int64) (contract.User, bool) {
	u, err := contract.NewUser(contract.ChannelTelegram, strconv.FormatInt(chat, 10))
	if err != nil {
		log.Warn().Int64("chat", chat).Msg("telegram chat id unusable; ignored")
		return u, false
	}
	if !i.inbox.Allows(u) {
		return u, false
	}
	return u, true
}

// telegramMessage is the inbound message of a message from an allowed chat,
// or of a stranger's pairing code.
func (i *Ingress) telegramMessage(ctx context.Context, log zerolog.Logger, update int64, msg *models.Message) (contract.Inbound, bool) {
	id := "tg" + strconv.FormatInt(update, 10)
	u, ok := i.telegramUser(log, msg.Chat.ID)
	if !ok {
		if u.ID != "" {
			if in, paired := i.pairIn(ctx, log, u, id, msg.Text); paired {
				return in, true
			}
			log.Info().Str("user", u.Key()).Msg("chat not in TELEGRAM_ALLOWED_CHATS nor paired in; ignored")
		}
		return contract.Inbound{}, false
	}
	in := contract.Inbound{ID: id, User: u, Text: msg.Text}
	if in.Text == "" {
		in.Text = msg.Caption
	}
	if m, ok := telegramMedia(msg); ok {
		in.Media = append(in.Media, m)
	}
	return in, true
}

// telegramMedia is the attachment of a message, if it has one: a photo (its
// largest size), a voice note, or any other file, which lands in the
// person's inbox.
func telegramMedia(msg *models.Message) (contract.Media, bool) {
	file := func(id, contentType, name string, seconds int) (contract.Media, bool) {
		if contentType == "" {
			contentType = "application/octet-stream"
		}
		return contract.Media{URL: telegramFile + id, ContentType: contentType, Name: name, Seconds: seconds}, id != ""
	}
	switch {
	case len(msg.Photo) > 0: // sizes, smallest first
		return file(msg.Photo[len(msg.Photo)-1].FileID, "image/jpeg", "", 0)
	case msg.Voice != nil:
		m, ok := file(msg.Voice.FileID, msg.Voice.MimeType, "", msg.Voice.Duration)
		m.Voice = true
		return m, ok
	case msg.Document != nil:
		return file(msg.Document.FileID, msg.Document.MimeType, msg.Document.FileName, 0)
	case msg.Audio != nil:
		return file(msg.Audio.FileID, msg.Audio.MimeType, msg.Audio.FileName, msg.Audio.Duration)
	case msg.Video != nil:
		return file(msg.Video.FileID, msg.Video.MimeType, msg.Video.FileName, msg.Video.Duration)
	case msg.VideoNote != nil:
		return file(msg.VideoNote.FileID, "video/mp4", "", msg.VideoNote.Duration)
	case msg.Animation != nil:
		return file(msg.Animation.FileID, msg.Animation.MimeType, msg.Animation.FileName, msg.Animation.Duration)
	case msg.Sticker != nil:
		return file(msg.Sticker.FileID, "image/webp", "sticker.webp", 0)
	}
	return contract.Media{}, false
}

// telegramCallback is the inbound message of a button pressed in an
// allowed chat: the button's reply as the person's message, its id the
// query's, so that Telegram's retries are stored once.
func (i *Ingress) telegramCallback(log zerolog.Logger, q *models.CallbackQuery) (contract.Inbound, bool) {
	chat, _, ok := callbackMessage(q)
	if !ok {
		log.Info().Msg("telegram button not under a message of a chat; ignored")
		return contract.Inbound{}, false
	}
	u, ok := i.telegramUser(log, chat)
	if !ok {
		log.Info().Str("user", u.Key()).Msg("button from a chat not in TELEGRAM_ALLOWED_CHATS nor paired in; ignored")
		return contract.Inbound{}, false
	}
	in := contract.Inbound{ID: "tgcb" + q.ID, User: u, Text: q.Data}
	if !contract.IsChoice(q.Data) { // the replies a button may send
		log.Info().Str("user", u.Key()).Int("data_len", len(q.Data)).Msg("telegram button with an unknown reply; ignored")
		return contract.Inbound{}, false
	}
	if _, err := contract.NewUser(contract.ChannelTelegram, in.ID); err != nil { // a message id is a token too
		log.Warn().Str("user", u.Key()).Msg("telegram callback query id unusable; ignored")
		return contract.Inbound{}, false
	}
	return in, true
}

// callbackMessage is the chat and id of the message whose button was
// pressed; not ok for a button of an inline message, in no chat.
func callbackMessage(q *models.CallbackQuery) (chat int64, id int, ok bool) {
	switch m := q.Message; {
	case m.Message != nil:
		return m.Message.Chat.ID, m.Message.ID, true
	case m.InaccessibleMessage != nil:
		return m.InaccessibleMessage.Chat.ID, m.InaccessibleMessage.MessageID, true
	}
	return 0, 0, false
}

// settleCallback tells Telegram the press was taken, so that the button
// stops spinning, and shows the reply chosen under the message, its
// buttons gone (only the buttons go from a photo, or a text too long to
// add to). Done for Telegram's retries of the press too: the first try
// may have been cut short. Failures are logged: the reply is stored.
func (i *Ingress) settleCallback(ctx context.Context, log zerolog.Logger, q *models.CallbackQuery) {
	t := i.cfg.Telegram
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b, err := t.newBot()
	if err != nil {
		log.Error().Err(err).Msg("telegram client")
		return
	}
	if _, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID}); err != nil {
		log.Warn().Err(t.clean(err)).Msg("telegram answerCallbackQuery")
	}
	chat, id, _ := callbackMessage(q)
	m := q.Message.Message
	if text := "\n\n→ " + label(q.Data); m != nil && m.Text != "" && utf8.RuneCountInString(m.Text+text) <= telegramTextLimit {
		// Egress sent it without its links' previews; an edit without the
		// option would bring them back (a crawler fetching a preview link).
		_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chat, MessageID: id, Text: m.Text + text,
			LinkPreviewOptions: &models.LinkPreviewOptions{IsDisabled: bot.True()}})
	} else {
		_, err = b.EditMessageReplyMarkup(ctx, &bot.EditMessageReplyMarkupParams{ChatID: chat, MessageID: id})
	}
	if err != nil {
		log.Warn().Err(t.clean(err)).Int("message_id", id).Msg("telegram message answered by a button not edited")
	}
}

// telegramTextLimit is the most characters a Telegram message holds.
const telegramTextLimit = 4096

// label is a reply as its button shows it: "yes" is "Yes".
func label(reply string) string {
	if reply == "" {
		return ""
	}
	return strings.ToUpper(reply[:1]) + reply[1:]
}

// newBot is a client of the Bot API.
func (t *Telegram) newBot() (*bot.Bot, error) {
	return bot.New(t.BotToken, bot.WithServerURL(t.APIURL), bot.WithSkipGetMe())
}

// clean is err without the bot token, which the Bot API's URLs hold; nil
// for nil.
func (t *Telegram) clean(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.ReplaceAll(err.Error(), t.BotToken, "<token>"))
}

// telegramDownload fetches a file a person sent on Telegram; ErrTooLarge
// for one over channel.MaxFetchBytes or Telegram's limit for bots.
func (i *Ingress) telegramDownload(ctx context.Context, fileID string) ([]byte, error) {
	t := i.cfg.Telegram
	if t == nil {
		return nil, errors.New("telegram is not configured")
	}
	b, err := t.newBot()
	if err != nil {
		return nil, err
	}
	f, err := b.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
	if err != nil && strings.Contains(err.Error(), "file is too big") { // over Telegram's 20 MB for bots
		return nil, channel.ErrTooLarge
	}
	if err != nil {
		return nil, t.clean(fmt.Errorf("getFile: %w", err))
	}
	if f.FileSize > channel.MaxFetchBytes {
		return nil, channel.ErrTooLarge
	}
	data, err := i.download(ctx, b.FileDownloadLink(f), nil)
	if errors.Is(err, channel.ErrTooLarge) {
		return nil, err
	}
	if err != nil { // the link holds the token
		return nil, t.clean(err)
	}
	return data, nil
}
