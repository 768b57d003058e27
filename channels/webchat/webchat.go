// Package webchat is textslash's local web chat on the channel port
// (channel/): a page a person opens in their browser, with a session of
// its own (a random person of the web channel, in a cookie the server
// signs), whose messages and files are posted to the page's routes and
// whose replies the browser pulls itself, as an event stream read
// straight from JetStream's EVENTS stream. It is a channel.Pager, not a
// Sender: nothing pushes to it, and its pages are served behind the web
// chat's own access check (the token when textslash can be reached from
// elsewhere, its own origin only), which says who reaches it; everyone
// who does is let in (channel.Anyone).
package webchat

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
)

// Config of the web chat.
type Config struct {
	// Sessions issues and checks the browsers' sessions.
	Sessions contract.WebSessions
	// Signer signs the links of the images and files replies carry (the
	// media service checks them).
	Signer contract.MediaSigner
	// PublicURL is where textslash is reached from outside, if anywhere:
	// over https the sessions' cookies are Secure.
	PublicURL string
	// MaxBodyBytes caps a message's request body; larger ones get 413.
	MaxBodyBytes int64
	// NewSessions bounds the sessions one client address may start:
	// NewSessions.Burst at once, then one per NewSessions.Every.
	NewSessions SessionLimit
	// KeepAlive is the interval of the comments that keep an idle event
	// stream open through proxies.
	KeepAlive time.Duration
}

// service names the web chat in its ConfigErrors.
const service = "webchat"

// Default returns c with every setting left zero set to its default.
func (c Config) Default() Config {
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 64 << 10
	}
	if c.NewSessions.Burst == 0 {
		c.NewSessions.Burst = 20
	}
	if c.NewSessions.Every == 0 {
		c.NewSessions.Every = time.Minute
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = 15 * time.Second
	}
	return c
}

// Validate checks c as it will run (call it on Default's result): nil, or
// every setting refused, each a *contract.ConfigError, joined. Sessions
// and Signer are handles, not settings (New checks that Sessions has its
// key).
func (c Config) Validate() error {
	var errs []error
	bad := func(setting string, value any, reason string) {
		errs = append(errs, contract.BadSetting(service, setting, value, reason))
	}
	if c.MaxBodyBytes < 1 {
		bad("MaxBodyBytes", c.MaxBodyBytes, "must be at least 1")
	}
	if c.NewSessions.Burst < 1 {
		bad("NewSessions.Burst", c.NewSessions.Burst, "must be at least 1")
	}
	if c.NewSessions.Every <= 0 {
		bad("NewSessions.Every", c.NewSessions.Every, "must be more than 0s")
	}
	if c.KeepAlive <= 0 {
		bad("KeepAlive", c.KeepAlive, "must be more than 0s")
	}
	return errors.Join(errs...)
}

// WebChat is the web chat channel.
type WebChat struct {
	cfg      Config
	js       jetstream.JetStream
	sessions *sessionLimiter
	log      zerolog.Logger
	// stopped is closed when Run returns: the event streams end then, or
	// an HTTP server's shutdown would wait for them until its deadline.
	stopped chan struct{}
	stop    sync.Once
}

var (
	_ channel.Channel = (*WebChat)(nil)
	_ channel.Pager   = (*WebChat)(nil)
)

// New is the web chat of cfg (defaulted, then validated), storing files
// and reading events through js.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*WebChat, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Sessions.Valid() {
		return nil, errors.New("webchat: no session key (Config.Sessions)")
	}
	if js == nil {
		return nil, errors.New("webchat: no JetStream")
	}
	return &WebChat{cfg: cfg, js: js, sessions: newSessionLimiter(cfg.NewSessions),
		log: log.With().Str("channel", contract.ChannelWeb).Logger(), stopped: make(chan struct{})}, nil
}

// Name is "web".
func (c *WebChat) Name() string { return contract.ChannelWeb }

// Rules are none: nothing pushes to the web chat, so nothing cuts or
// paces its replies; the page shows each whole.
func (c *WebChat) Rules() channel.Rules { return channel.Rules{} }

// Allowed is everyone with a session: who reaches the page is the web
// chat's access check's to say.
func (c *WebChat) Allowed() []string { return []string{channel.Anyone} }

// Run waits for ctx to end, then ends the event streams: the web chat's
// inbound side is its pages.
func (c *WebChat) Run(ctx context.Context, _ channel.Host) error {
	<-ctx.Done()
	c.stop.Do(func() { close(c.stopped) })
	return nil
}

// Pages are the chat's page, its message and file endpoints (publishing
// with h) and its event stream.
func (c *WebChat) Pages(h channel.Host) map[string]http.Handler {
	return map[string]http.Handler{
		"GET /{$}":           http.HandlerFunc(c.page),
		"POST /api/messages": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.message(w, r, h) }),
		"POST /api/files":    http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { c.file(w, r, h) }),
		"GET /api/events":    http.HandlerFunc(c.events),
	}
}
