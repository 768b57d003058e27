package ingress

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/textslash/textslash/contract"
)

// Telegram configures the Telegram bot webhook.
type Telegram struct {
	// BotToken (TELEGRAM_BOT_TOKEN) fetches the photos people send.
	BotToken string
	// Secret is the secret_token given to setWebhook
	// (TELEGRAM_WEBHOOK_SECRET): Telegram sends it in
	// X-Telegram-Bot-Api-Secret-Token with every update.
	Secret string
	// Allowed are the chat ids that may talk to the agent
	// (TELEGRAM_ALLOWED_CHATS).
	Allowed []string
	// APIURL replaces https://api.telegram.org (TEXTSLASH_TELEGRAM_API_URL).
	APIURL string
}

// TelegramPath is where Telegram posts updates.
const TelegramPath = "/telegram/webhook"

// telegramFile is the scheme of a photo's media URL in an inbound event:
// telegram:<file_id>, fetched by the media fetch service with getFile.
const telegramFile = "telegram:"

func (t *Telegram) validate() error {
	if t.BotToken == "" {
		return errors.New("telegram: no bot token (TELEGRAM_BOT_TOKEN)")
	}
	if len(t.Secret) < 16 {
		return errors.New("telegram: TELEGRAM_WEBHOOK_SECRET must have 16 or more characters (give the same to setWebhook as secret_token)")
	}
	if len(t.Allowed) == 0 {
		return errors.New("telegram: TELEGRAM_ALLOWED_CHATS is empty, so nobody could use textslash; list the chat ids that may")
	}
	for _, id := range t.Allowed {
		if _, err := strconv.ParseInt(id, 10, 64); err != nil {
			return fmt.Errorf("telegram: TELEGRAM_ALLOWED_CHATS: %q is not a chat id", id)
		}
	}
	if t.APIURL == "" {
		t.APIURL = "https://api.telegram.org"
	}
	t.APIURL = strings.TrimSuffix(t.APIURL, "/")
	return nil
}

// ParseList splits a comma-separated list, dropping empty items:
// ALLOWED_PHONE_NUMBERS, TELEGRAM_ALLOWED_CHATS.
func ParseList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// telegramWebhook takes one update from Telegram. Telegram retries an
// update until it gets a 2xx, so every update it should not retry gets 200:
// those from chats not allowed and those that are not messages.
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
	var upd models.Update
	if err := json.Unmarshal(body, &upd); err != nil || upd.ID <= 0 {
		http.Error(w, "malformed update", http.StatusBadRequest)
		return
	}
	ctx, log := i.traced(r)
	log = log.With().Int64("update_id", upd.ID).Logger()
	msg := upd.Message
	if msg == nil {
		log.Debug().Msg("telegram update is not a new message; ignored")
		return
	}
	u, err := contract.NewUser(contract.ChannelTelegram, strconv.FormatInt(msg.Chat.ID, 10))
	if err != nil {
		log.Warn().Int64("chat", msg.Chat.ID).Msg("telegram chat id unusable; ignored")
		return
	}
	log = log.With().Str("user", u.Key()).Logger()
	if _, ok := i.chats[u.ID]; !ok {
		log.Info().Msg("chat not in TELEGRAM_ALLOWED_CHATS; ignored")
		return
	}
	in := contract.Inbound{ID: "tg" + strconv.FormatInt(upd.ID, 10), User: u, Text: msg.Text}
	if in.Text == "" {
		in.Text = msg.Caption
	}
	switch {
	case len(msg.Photo) > 0: // sizes, smallest first
		in.Media = append(in.Media, contract.Media{URL: telegramFile + msg.Photo[len(msg.Photo)-1].FileID, ContentType: "image/jpeg"})
	case msg.Document != nil:
		in.Media = append(in.Media, contract.Media{URL: telegramFile + msg.Document.FileID, ContentType: msg.Document.MimeType})
	case msg.Voice != nil, msg.Audio != nil, msg.Video != nil, msg.VideoNote != nil, msg.Sticker != nil, msg.Animation != nil:
		// Not an image: the dispatcher answers that it cannot read it.
		in.Media = append(in.Media, contract.Media{URL: telegramFile, ContentType: "application/octet-stream"})
	}
	if err := i.Publish(ctx, in); err != nil {
		log.Error().Err(err).Msg("telegram update not stored; Telegram will retry")
		http.Error(w, "could not take the message", http.StatusServiceUnavailable)
		return
	}
}

// telegramDownload fetches a file a person sent on Telegram.
func (i *Ingress) telegramDownload(ctx context.Context, fileID string) ([]byte, error) {
	t := i.cfg.Telegram
	if t == nil {
		return nil, errors.New("telegram is not configured")
	}
	b, err := bot.New(t.BotToken, bot.WithServerURL(t.APIURL), bot.WithSkipGetMe())
	if err != nil {
		return nil, err
	}
	f, err := b.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
	if err != nil {
		return nil, fmt.Errorf("getFile: %w", err)
	}
	data, err := i.download(ctx, b.FileDownloadLink(f), nil)
	if err != nil { // the link holds the token
		return nil, errors.New(strings.ReplaceAll(err.Error(), t.BotToken, "<token>"))
	}
	return data, nil
}
