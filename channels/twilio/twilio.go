// Package twilio is textslash's WhatsApp and SMS channels through Twilio,
// on the channel port (channel/): people's messages come in as Twilio's
// signed webhooks, replies go out through the Messages API (WhatsApp's
// quick-reply buttons through the Content API, its typing indicator
// through the Messaging API), and each message's delivery is reported by
// status callbacks. One Config and one client serve both channels:
// Twilio.Channels are WhatsApp's and SMS's, each a channel.Channel (and a
// Finder, Fetcher, Retrier, Linker and Explainer; WhatsApp's a Typer, a
// Router taking every Twilio webhook, and a Windowed channel, whose
// refused messages wait for the person's next message). They are built
// in: ingress runs their inbound side, egress their Send. It is built on
// github.com/twilio/twilio-go.
package twilio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	twilio "github.com/twilio/twilio-go"
	"github.com/twilio/twilio-go/client"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
)

// Twilio is the two channels' shared side: the configuration, the API
// client, the webhooks' signature check.
type Twilio struct {
	cfg       Config
	api       *twilio.RestClient
	validator *client.RequestValidator
	// js publishes the window and delivery events of the webhooks, and
	// looks up whether egress holds messages for a person.
	js  jetstream.JetStream
	log zerolog.Logger
}

// New is the WhatsApp and SMS channels of cfg (defaulted, then validated:
// each refusal a *contract.ConfigError of the twilio service). js is the
// JetStream the webhooks publish their window and delivery events with;
// nil where only Send is used, or where no window is kept (a person's
// message then announces none, and status callbacks are refused).
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Twilio, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rv := client.NewRequestValidator(cfg.AuthToken)
	return &Twilio{cfg: cfg, api: newAPI(cfg), validator: &rv, js: js, log: log.With().Str("channel", "twilio").Logger()}, nil
}

// Channels are WhatsApp's and SMS's.
func (t *Twilio) Channels() []channel.Channel {
	return []channel.Channel{&WhatsApp{line{t: t, s: &sender{cfg: t.cfg, api: t.api, channel: contract.ChannelWhatsApp}}},
		&SMS{line{t: t, s: &sender{cfg: t.cfg, api: t.api, channel: contract.ChannelSMS}}}}
}

// line is what the two channels share: sending through the Messages API,
// fetching people's files.
type line struct {
	t *Twilio
	s *sender
}

// WhatsApp is the WhatsApp channel: a line with its typing indicator, its
// reply window and Twilio's webhooks.
type WhatsApp struct{ line }

// SMS is the SMS channel.
type SMS struct{ line }

var (
	_ channel.Channel   = (*WhatsApp)(nil)
	_ channel.Finder    = (*WhatsApp)(nil)
	_ channel.Typer     = (*WhatsApp)(nil)
	_ channel.Fetcher   = (*WhatsApp)(nil)
	_ channel.Router    = (*WhatsApp)(nil)
	_ channel.Retrier   = (*WhatsApp)(nil)
	_ channel.Linker    = (*WhatsApp)(nil)
	_ channel.Explainer = (*WhatsApp)(nil)
	_ channel.Windowed  = (*WhatsApp)(nil)
	_ channel.Reporter  = (*WhatsApp)(nil)
	_ channel.Channel   = (*SMS)(nil)
	_ channel.Fetcher   = (*SMS)(nil)
	_ channel.Reporter  = (*SMS)(nil)
)

// Name is the channel's: whatsapp.
func (*WhatsApp) Name() string { return contract.ChannelWhatsApp }

// Name is the channel's: sms.
func (*SMS) Name() string { return contract.ChannelSMS }

// Rules are WhatsApp's limits (Config.WhatsApp, defaulted).
func (w *WhatsApp) Rules() channel.Rules { return w.t.cfg.WhatsApp }

// Rules are SMS's limits (Config.SMS, defaulted).
func (s *SMS) Rules() channel.Rules { return s.t.cfg.SMS }

// Typing shows "typing…" in answer to the person's message jobID.
func (w *WhatsApp) Typing(ctx context.Context, u contract.User, jobID string) error {
	return w.s.Typing(ctx, u, jobID)
}

// Window is WhatsApp's 24-hour reply window: the code of a message refused
// outside it, and the template that asks the person to write ("": none).
func (w *WhatsApp) Window() (closedCode int, template string) {
	return codeOutOfReply, w.t.cfg.WindowContentSID
}

// Routes serve every Twilio webhook, WhatsApp's and SMS's alike (Twilio
// posts both to one URL): POST /webhook and /sms take people's messages,
// publishing them with h, and POST StatusCallbackPath the status
// callbacks; each checked against Twilio's signature first.
func (w *WhatsApp) Routes(h channel.Host) map[string]http.Handler {
	take := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { w.t.webhook(rw, r, h) })
	return map[string]http.Handler{"POST /webhook": take, "POST /sms": take, "POST " + StatusCallbackPath: http.HandlerFunc(w.t.status)}
}

// Allowed are the numbers the configuration allows, as person ids.
func (l *line) Allowed() []string {
	var ids []string
	for _, n := range l.t.cfg.Allowed {
		if u, err := contract.PhoneUser(contract.ChannelSMS, n); err == nil {
			ids = append(ids, u.ID)
		}
	}
	return ids
}

// Send sends m through the Messages API.
func (l *line) Send(ctx context.Context, u contract.User, m channel.Message) (string, error) {
	return l.s.Send(ctx, u, m)
}

// Find looks the message up among the person's latest (sender.Find).
func (l *line) Find(ctx context.Context, u contract.User, m channel.Message, since time.Time) (string, error) {
	return l.s.Find(ctx, u, m, since)
}

// Explain is what an operator should know of a Twilio error code.
func (l *line) Explain(code int) string { return l.s.Explain(code) }

// Retry bounds the tries of a failed send (Config.Retry).
func (l *line) Retry() channel.Retry { return l.t.cfg.Retry }

// MediaBase is where Twilio fetches replies' images: the public URL.
func (l *line) MediaBase() string { return l.t.cfg.PublicURL }

// SentWait is how long a person's next message waits for the last one's
// status callback; 0 without status callbacks.
func (l *line) SentWait() time.Duration {
	if !l.t.cfg.StatusCallbacks {
		return 0
	}
	return l.t.cfg.SentWait
}

// Run waits for ctx to end: Twilio's webhooks come to Routes.
func (l *line) Run(ctx context.Context, _ channel.Host) error {
	<-ctx.Done()
	return nil
}

// Fetch downloads a file a person sent (a media URL of this account) with
// the account's credentials: channel.ErrNotMine for any other URL.
func (l *line) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	c := l.t.cfg
	if c.AccountSID == "" || !strings.HasPrefix(url, c.apiBase()+"/2010-04-01/Accounts/"+c.AccountSID+"/") {
		return nil, "", fmt.Errorf("%w: not a media URL of this Twilio account", channel.ErrNotMine)
	}
	data, err := channel.Download(ctx, url, func(r *http.Request) { r.SetBasicAuth(c.AccountSID, c.AuthToken) })
	if err != nil && !errors.Is(err, channel.ErrTooLarge) {
		return nil, "", fmt.Errorf("twilio media: %w", err)
	}
	return data, "", err
}
