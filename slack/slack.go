// Package slack is textslash's Slack channel: a bot people talk to in
// direct messages and in channels where they mention it. It owns both
// edges of Slack: the inbound side turns Slack's events (over Socket Mode
// by default, or the Events API's signed requests) into contract.Inbound
// messages given to one publish function, and Sender delivers textslash's
// messages through the Web API (texts, progress edited in place, images and
// files uploaded, questions and approvals as Block Kit buttons). What it
// needs from the channel kit is in New's result: a name, Rules, a Sender,
// the allowlist and Fetch for the files people send.
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

	"github.com/rs/zerolog"
	api "github.com/slack-go/slack"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress"
)

// PublishFunc stores one inbound message (the kit's Publish): it returns
// nil once the message is stored, deduplicated by its ID; an error makes
// Slack deliver the event again.
type PublishFunc func(ctx context.Context, in contract.Inbound) error

// Slack is the Slack channel: its inbound side (Run, Handler) and its
// Sender.
type Slack struct {
	cfg     Config
	client  *api.Client
	publish PublishFunc
	log     zerolog.Logger
	sender  *Sender
	seen    *recent
	// botUser is the bot's own user id (auth.test), once Run has asked.
	botUser atomic.Pointer[string]
}

// New is the Slack channel of cfg (defaulted, then validated: each refusal
// a *contract.ConfigError), publishing what people send with publish.
func New(cfg Config, publish PublishFunc, log zerolog.Logger) (*Slack, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if publish == nil {
		return nil, fmt.Errorf("slack: no publish function")
	}
	log = log.With().Str("channel", Channel).Logger()
	opts := []api.Option{api.OptionAPIURL(cfg.APIURL), api.OptionHTTPClient(&http.Client{Timeout: time.Minute})}
	if cfg.AppToken != "" {
		opts = append(opts, api.OptionAppLevelToken(cfg.AppToken))
	}
	client := api.New(cfg.BotToken, opts...)
	s := &Slack{cfg: cfg, client: client, publish: publish, log: log, seen: newRecent(4096)}
	s.sender = newSender(client, log)
	return s, nil
}

// Name is the channel's name: users are contract.User{Channel: "slack"}.
func (s *Slack) Name() string { return Channel }

// Sender delivers messages to Slack (an egress.Sender and egress.Finder).
func (s *Slack) Sender() *Sender { return s.sender }

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
func Rules() egress.Rules {
	return egress.Rules{BodyLimit: BodyLimit, MaxMedia: 10, MaxImageBytes: 50 << 20, MaxFileBytes: 50 << 20,
		ProgressEvery: 3 * time.Second}
}

// BodyLimit is the most characters of one message's text: a Block Kit
// section's.
const BodyLimit = 3000

// Run takes Slack's events until ctx ends: it checks the bot token
// (auth.test) and learns the bot's user id, then, in Socket Mode, keeps a
// connection open; with the Events API, Handler takes them and Run waits.
// An error is returned only for what retrying cannot mend (a token Slack
// refuses).
func (s *Slack) Run(ctx context.Context) error {
	who, err := s.client.AuthTestContext(ctx)
	if err != nil {
		return fmt.Errorf("slack: auth.test with SLACK_BOT_TOKEN: %w", err)
	}
	s.botUser.Store(&who.UserID)
	s.log.Info().Str("team", who.TeamID).Str("bot_user", who.UserID).Bool("socket_mode", s.cfg.SocketMode()).Msg("slack bot ready")
	if s.cfg.SocketMode() {
		return s.runSocket(ctx)
	}
	<-ctx.Done()
	return nil
}

// Fetch downloads a file a person sent (a contract.Media URL this package
// published) with the bot token: its bytes and Content-Type.
func (s *Slack) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	return fetch(ctx, s.cfg, url)
}
