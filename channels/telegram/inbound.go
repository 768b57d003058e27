package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
)

// fileScheme is the scheme of a file's media URL in an inbound message:
// telegram:<file_id>, fetched with getFile (Fetch).
const fileScheme = "telegram:"

// maxUpdateBytes bounds an update posted to the webhook.
const maxUpdateBytes = 64 << 10

// webhookUpdate takes one update Telegram posts: with the webhook's
// secret, the update as update takes it; 503 when it could not be
// stored, so that Telegram sends it again.
func (t *Telegram) webhookUpdate(w http.ResponseWriter, r *http.Request, h channel.Host) {
	got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
	if subtle.ConstantTimeCompare([]byte(got), []byte(t.cfg.Secret)) != 1 {
		t.log.Warn().Str("remote", r.RemoteAddr).Msg("telegram update without the webhook secret; refused")
		http.Error(w, "invalid secret token", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxUpdateBytes))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	upd, err := parseUpdate(body)
	if err != nil {
		http.Error(w, "malformed update", http.StatusBadRequest)
		return
	}
	trace := contract.NewTrace(r.Header.Get("traceparent"))
	ctx := contract.WithTrace(r.Context(), trace)
	if err := t.update(ctx, t.log.With().Str(contract.LogTrace, trace).Logger(), h, upd); err != nil {
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

// update takes one update from Telegram, by webhook or polling: a
// message, or the press of a button under one of the bot's messages (a
// callback query). It fails only when the update should come again: when
// IN did not store it. Telegram sends an update again until it is taken,
// so every update it should not send again is taken: those from chats not
// allowed and those that are neither.
func (t *Telegram) update(ctx context.Context, log zerolog.Logger, h channel.Host, upd *models.Update) error {
	log = log.With().Int64("update_id", upd.ID).Logger()
	var in contract.Inbound
	var ok bool
	switch {
	case upd.Message != nil:
		in, ok = message(log, upd.ID, upd.Message)
	case upd.CallbackQuery != nil:
		in, ok = callback(log, upd.CallbackQuery)
	default:
		log.Debug().Msg("telegram update is neither a new message nor a button pressed; ignored")
	}
	if !ok {
		return nil
	}
	err := h.Publish(ctx, in)
	switch {
	case errors.Is(err, channel.ErrNotAllowed):
		log.Info().Str("user", in.User.Key()).Msg("chat not in TELEGRAM_ALLOWED_CHATS nor paired in; ignored")
		return nil
	case err != nil:
		log.Error().Err(err).Msg("telegram update not stored; Telegram will send it again")
		return err
	}
	if upd.CallbackQuery != nil {
		t.settleCallback(ctx, log.With().Str("user", in.User.Key()).Logger(), upd.CallbackQuery)
	}
	return nil
}

// user is the person of a chat; not ok for a chat id that is no person
// id.
func user(log zerolog.Logger, chat int64) (contract.User, bool) {
	u, err := contract.NewUser(Channel, strconv.FormatInt(chat, 10))
	if err != nil {
		log.Warn().Int64("chat", chat).Msg("telegram chat id unusable; ignored")
		return u, false
	}
	return u, true
}

// message is the inbound message of a message: its text (or caption) and
// its attachment. Whether its chat may talk (or pairs in with a code) is
// the host's to say.
func message(log zerolog.Logger, update int64, msg *models.Message) (contract.Inbound, bool) {
	u, ok := user(log, msg.Chat.ID)
	if !ok {
		return contract.Inbound{}, false
	}
	in := contract.Inbound{ID: "tg" + strconv.FormatInt(update, 10), User: u, Text: msg.Text}
	if in.Text == "" {
		in.Text = msg.Caption
	}
	if m, ok := media(msg); ok {
		in.Media = append(in.Media, m)
	}
	return in, true
}

// media is the attachment of a message, if it has one: a photo (its
// largest size), a voice note, or any other file, which lands in the
// person's inbox.
func media(msg *models.Message) (contract.Media, bool) {
	file := func(id, contentType, name string, seconds int) (contract.Media, bool) {
		if contentType == "" {
			contentType = "application/octet-stream"
		}
		return contract.Media{URL: fileScheme + id, ContentType: contentType, Name: name, Seconds: seconds}, id != ""
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

// callback is the inbound message of a button pressed in a chat: the button's reply as the person's message, its id the
// query's, so that Telegram's retries are stored once.
func callback(log zerolog.Logger, q *models.CallbackQuery) (contract.Inbound, bool) {
	chat, _, ok := callbackMessage(q)
	if !ok {
		log.Info().Msg("telegram button not under a message of a chat; ignored")
		return contract.Inbound{}, false
	}
	u, ok := user(log, chat)
	if !ok {
		return contract.Inbound{}, false
	}
	in := contract.Inbound{ID: "tgcb" + q.ID, User: u, Text: q.Data}
	if !contract.IsChoice(q.Data) { // the replies a button may send
		log.Info().Str("user", u.Key()).Int("data_len", len(q.Data)).Msg("telegram button with an unknown reply; ignored")
		return contract.Inbound{}, false
	}
	if _, err := contract.NewUser(Channel, in.ID); err != nil { // a message id is a token too
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
func (t *Telegram) settleCallback(ctx context.Context, log zerolog.Logger, q *models.CallbackQuery) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	b := t.bot
	if _, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID}); err != nil {
		log.Warn().Err(t.clean(err)).Msg("telegram answerCallbackQuery")
	}
	chat, id, _ := callbackMessage(q)
	var err error
	m := q.Message.Message
	if text := "\n\n→ " + label(q.Data); m != nil && m.Text != "" && utf8.RuneCountInString(m.Text+text) <= bodyLimit {
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
