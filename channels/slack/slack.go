// Package slack is textslash's Slack channel: a bot people talk to in
// direct messages and in channels where they mention it. It owns both
// edges of Slack: the inbound side turns Slack's events (over Socket Mode
// by default, or the Events API's signed requests) into contract.Inbound
// messages it publishes with its channel.Host, and Sender delivers
// textslash's messages through the Web API (texts, progress edited in
// place, images and files uploaded, questions and approvals as Block Kit
// buttons). *Slack is a channel.Channel (and a Finder, Fetcher and
// Router); the kit does the rest: the allowlist and pairing, per-person
// order, retries, pages, no message sent twice. Run it as:
//
//	s, err := slack.New(cfg, log)
//	k, err := kit.Open(ctx, nc, s, log)
//	err = k.Run(ctx) // and serve s.Routes() with the Events API
//
// It is built on github.com/slack-go/slack, the maintained Go client of
// the Web API, Socket Mode (socketmode) and the Events API (slackevents,
// request signatures).
package slack

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"
	api "github.com/slack-go/slack"
)

// Slack is the Slack channel: its inbound side (Run, Routes) and its
// Sender.
type Slack struct {
	*Sender
	cfg    Config
	client *api.Client
	log    zerolog.Logger
	seen   *recent
	places *channel.Places
	// host publishes what people send, once Run has it.
	host atomic.Pointer[channel.Host]
	// botUser is the bot's own user id (auth.test), once Run has asked.
	botUser atomic.Pointer[string]
}

// New is the Slack channel of cfg (defaulted, then validated: each refusal
// a *contract.ConfigError). Open the kit with it, then run the kit.
func New(cfg Config, log zerolog.Logger) (*Slack, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log = log.With().Str("channel", Channel).Logger()
	opts := []api.Option{api.OptionAPIURL(cfg.APIURL), api.OptionHTTPClient(&http.Client{Timeout: time.Minute})}
	if cfg.AppToken != "" {
		opts = append(opts, api.OptionAppLevelToken(cfg.AppToken))
	}
	client := api.New(cfg.BotToken, opts...)
	s := &Slack{cfg: cfg, client: client, log: log, seen: newRecent(4096), places: channel.NewPlaces()}
	s.Sender = &Sender{client: client, log: log, places: s.places}
	return s, nil
}

var (
	_ channel.Channel = (*Slack)(nil)
	_ channel.Finder  = (*Slack)(nil)
	_ channel.Fetcher = (*Slack)(nil)
	_ channel.Router  = (*Slack)(nil)
)

// Name is the channel's: slack.
func (s *Slack) Name() string { return Channel }

// Allowed are the Slack user ids allowed by the configuration.
func (s *Slack) Allowed() []string { return append([]string(nil), s.cfg.Allowed...) }

// Rules are Slack's limits as egress applies them:
//   - a message's text of at most 3,000 characters, the most a Block Kit
//     section holds, so that any page can carry buttons; longer replies
//     come in pages, the person answering MORE (see Sender);
//   - up to 10 images or files shared with one message (one
//     files.completeUploadExternal), each at most 50 MB;
//   - progress edited in one status message (chat.update), so it may come
//     every 3 s, within chat.update's tier 3 (50 a minute).
func (s *Slack) Rules() channel.Rules { return Rules() }

// Rules are Slack's limits (see Slack.Rules).
func Rules() channel.Rules {
	return channel.Rules{BodyLimit: BodyLimit, MaxMedia: 10, MaxImageBytes: 50 << 20, MaxFileBytes: 50 << 20,
		ProgressEvery: 3 * time.Second}
}

// BodyLimit is the most characters of one message's text: a Block Kit
// section's.
const BodyLimit = 3000

// Run runs the channel's inbound side with h until ctx ends: it checks
// the bot token (auth.test) and learns the bot's user id, then takes
// Slack's events: in Socket Mode over a connection it keeps open; with
// the Events API, Routes take them. An error is returned only for what
// retrying cannot mend (a token Slack refuses).
func (s *Slack) Run(ctx context.Context, h channel.Host) error {
	who, err := s.client.AuthTestContext(ctx)
	if err != nil {
		return fmt.Errorf("slack: auth.test with SLACK_BOT_TOKEN: %w", err)
	}
	s.botUser.Store(&who.UserID)
	s.host.Store(&h)
	s.log.Info().Str("team", who.TeamID).Str("bot_user", who.UserID).Bool("socket_mode", s.cfg.SocketMode()).Msg("slack bot ready")
	if !s.cfg.SocketMode() {
		<-ctx.Done()
		return nil
	}
	return s.runSocket(ctx)
}

// Fetch downloads a file a person sent (a contract.Media URL this package
// published) with the bot token: its bytes and Content-Type;
// ErrNotSlackFile (a channel.ErrNotMine) for any other URL, ErrTooLarge (a
// channel.ErrTooLarge) over MaxFetchBytes.
func (s *Slack) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	return fetch(ctx, s.cfg, url)
}
