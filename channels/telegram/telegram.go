// Package telegram is textslash's Telegram channel, on the channel port
// (channel/): a bot whose updates come in by webhook (an https public URL)
// or by polling, and whose replies go out through the Bot API (texts,
// progress edited in one status message, photos, media groups and
// documents, questions and approvals as inline keyboards, "typing…").
// *Telegram is a channel.Channel (and a Typer, Fetcher, Router, Retrier
// and Linker). It is built in: ingress runs its inbound side (Run, Routes,
// Fetch), egress its Send, each with one Config. It is built on
// github.com/go-telegram/bot.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
)

// Channel is the channel's name: its people are
// contract.User{Channel: "telegram", ID: <chat id>}.
const Channel = contract.ChannelTelegram

// Telegram is the channel.
type Telegram struct {
	cfg    Config
	bot    *bot.Bot
	log    zerolog.Logger
	upload bool // images are uploaded, not given by URL
	// leases is the bucket whose key says which process polls, and the
	// offset reached (contract.TelegramPoll); nil: Run cannot poll.
	leases jetstream.KeyValue

	mu     sync.Mutex
	status map[string]statusMessage // by chat
	quiet  map[string]time.Time     // by chat: no typing before, after a 429
}

var (
	_ channel.Channel = (*Telegram)(nil)
	_ channel.Typer   = (*Telegram)(nil)
	_ channel.Fetcher = (*Telegram)(nil)
	_ channel.Router  = (*Telegram)(nil)
	_ channel.Retrier = (*Telegram)(nil)
	_ channel.Linker  = (*Telegram)(nil)
)

// New is the Telegram channel of cfg (defaulted, then validated: each
// refusal a *contract.ConfigError). leases is the telegram bucket
// (contract.BucketTelegram), which polling needs; nil where only Send is
// used.
func New(cfg Config, leases jetstream.KeyValue, log zerolog.Logger) (*Telegram, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log = log.With().Str("channel", Channel).Logger()
	b, err := bot.New(cfg.BotToken, bot.WithServerURL(cfg.APIURL), bot.WithSkipGetMe(),
		bot.WithHTTPClient(time.Minute, &http.Client{Timeout: time.Minute}),
		bot.WithErrorsHandler(func(err error) { log.Warn().Err(err).Msg("telegram client") }))
	if err != nil {
		return nil, fmt.Errorf("telegram: %w", err)
	}
	return &Telegram{cfg: cfg, bot: b, log: log, upload: cfg.PublicURL == "", leases: leases,
		status: map[string]statusMessage{}, quiet: map[string]time.Time{}}, nil
}

// Name is the channel's: telegram.
func (t *Telegram) Name() string { return Channel }

// Rules are Telegram's limits (Config.Rules, defaulted).
func (t *Telegram) Rules() channel.Rules { return t.cfg.Rules }

// Allowed are the chat ids the configuration allows.
func (t *Telegram) Allowed() []string { return append([]string(nil), t.cfg.Allowed...) }

// Retry bounds the tries of a failed send (Config.Retry).
func (t *Telegram) Retry() channel.Retry { return t.cfg.Retry }

// MediaBase is where a reply's images are linked from: the public URL,
// which Telegram fetches them from; without one, the media service's
// local URL, which Send reads them from to upload them.
func (t *Telegram) MediaBase() string {
	if t.cfg.PublicURL != "" {
		return t.cfg.PublicURL
	}
	return t.cfg.LocalURL
}

// Run takes the bot's updates until ctx ends, publishing each with h: it
// sets the webhook (an https PublicURL) and waits for Routes to take
// them, or polls for them while it holds the lease.
func (t *Telegram) Run(ctx context.Context, h channel.Host) error {
	return t.receive(ctx, h)
}

// Routes serve the webhook at POST WebhookPath, publishing with h, with
// its secret only.
func (t *Telegram) Routes(h channel.Host) map[string]http.Handler {
	if t.cfg.Secret == "" {
		return nil
	}
	return map[string]http.Handler{"POST " + WebhookPath: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.webhookUpdate(w, r, h)
	})}
}

// Fetch downloads a file a person sent (a telegram:<file_id> media URL of
// this channel) with getFile: channel.ErrNotMine for any other URL,
// channel.ErrTooLarge for one over channel.MaxFetchBytes or Telegram's
// limit for bots.
func (t *Telegram) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	id, ok := strings.CutPrefix(url, fileScheme)
	if !ok || id == "" {
		return nil, "", fmt.Errorf("%w: not a Telegram file", channel.ErrNotMine)
	}
	f, err := t.bot.GetFile(ctx, &bot.GetFileParams{FileID: id})
	if err != nil && strings.Contains(err.Error(), "file is too big") { // over Telegram's 20 MB for bots
		return nil, "", channel.ErrTooLarge
	}
	if err != nil {
		return nil, "", t.clean(fmt.Errorf("getFile: %w", err))
	}
	if f.FileSize > channel.MaxFetchBytes {
		return nil, "", channel.ErrTooLarge
	}
	data, err := channel.Download(ctx, t.bot.FileDownloadLink(f), nil)
	if errors.Is(err, channel.ErrTooLarge) {
		return nil, "", err
	}
	if err != nil { // the link holds the token
		return nil, "", t.clean(err)
	}
	return data, "", nil
}

// clean is err without the bot token, which the Bot API's URLs hold; nil
// for nil.
func (t *Telegram) clean(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.ReplaceAll(err.Error(), t.cfg.BotToken, "<token>"))
}
