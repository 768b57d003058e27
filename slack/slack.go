// Package slack is textslash's Slack channel: a bot people talk to in
// direct messages and in channels where they mention it. It owns both
// edges of Slack: the inbound side turns Slack's events (over Socket Mode
// by default, or the Events API's signed requests) into contract.Inbound
// messages published with the channel kit (kit/), and Sender delivers
// textslash's messages through the Web API (texts, progress edited in
// place, images and files uploaded, questions and approvals as Block Kit
// buttons). The kit does the rest: the allowlist and pairing, per-person
// order, retries, pages, no message sent twice. Run it as:
//
//	s, err := slack.New(cfg, log)
//	k, err := kit.Open(ctx, nc, s.Channel(), log)
//	err = s.Run(ctx, k) // and serve s.Handler() with the Events API
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

	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/kit"
)

// Slack is the Slack channel: its inbound side (Run, Handler) and its
// Sender.
type Slack struct {
	cfg    Config
	client *api.Client
	log    zerolog.Logger
	sender *Sender
	seen   *recent
	places *kit.Places
	// kit is the channel kit, once Run has it.
	kit atomic.Pointer[kit.Host]
	// botUser is the bot's own user id (auth.test), once Run has asked.
	botUser atomic.Pointer[string]
}

// New is the Slack channel of cfg (defaulted, then validated: each refusal
// a *contract.ConfigError). Open the kit with its Channel, then Run it.
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
	s := &Slack{cfg: cfg, client: client, log: log, seen: newRecent(4096), places: kit.NewPlaces()}
	s.sender = &Sender{client: client, log: log, places: s.places, media: s.media}
	return s, nil
}

// Channel is the channel as the kit runs it: its name, Rules, Sender
// (an egress.Finder too), the Slack user ids allowed, and Fetch for the
// files people send.
func (s *Slack) Channel() kit.Channel {
	return kit.Channel{Name: Channel, Rules: Rules(), Sender: s.sender, Allowed: s.Allowed(), Fetch: s.Fetch}
}

// media reads a reply's image or file through the kit (ErrNotRunning
// before Run).
func (s *Slack) media(ctx context.Context, ref string) (kit.Attachment, error) {
	k := s.kit.Load()
	if k == nil {
		return kit.Attachment{}, ErrNotRunning
	}
	return (*k).Media(ctx, ref)
}

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

// Run runs the channel with k, the kit opened with its Channel, until
// ctx ends: it checks the bot token (auth.test) and learns the bot's user
// id, then delivers textslash's messages (k.Run) and takes Slack's events:
// in Socket Mode over a connection it keeps open; with the Events API,
// Handler takes them. An error is returned only for what retrying cannot
// mend (a token Slack refuses) or the kit's.
func (s *Slack) Run(ctx context.Context, k kit.Host) error {
	who, err := s.client.AuthTestContext(ctx)
	if err != nil {
		return fmt.Errorf("slack: auth.test with SLACK_BOT_TOKEN: %w", err)
	}
	s.botUser.Store(&who.UserID)
	s.kit.Store(&k)
	s.log.Info().Str("team", who.TeamID).Str("bot_user", who.UserID).Bool("socket_mode", s.cfg.SocketMode()).Msg("slack bot ready")
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return k.Run(ctx) })
	if s.cfg.SocketMode() {
		g.Go(func() error { return s.runSocket(ctx) })
	}
	return g.Wait()
}

// Fetch downloads a file a person sent (a contract.Media URL this package
// published) with the bot token: its bytes and Content-Type;
// ErrNotSlackFile (a kit.ErrNotMine) for any other URL, ErrTooLarge (a
// kit.ErrTooLarge) over MaxFetchBytes.
func (s *Slack) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	return fetch(ctx, s.cfg, url)
}
