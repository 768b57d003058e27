// Package ingress is textslash's HTTP edge for inbound messages. It checks
// who is speaking, publishes one inbound event per message to JetStream and
// answers the caller as soon as JetStream has it. It decides nothing else.
package ingress

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
)

// Config of the ingress service.
type Config struct {
	// PublishTimeout bounds the wait for JetStream's acknowledgement.
	PublishTimeout time.Duration
	// Channels are the channels on the port whose inbound side this
	// ingress runs (Twilio's WhatsApp and SMS, Telegram, the web chat):
	// each one's Run with the inbox as its Host (Run), its webhooks (a
	// channel.Router) served by Handler, its pages (a channel.Pager) by
	// Pages, its people's attachments fetched with it (a channel.Fetcher).
	Channels []channel.Channel
	// Notion, when set, turns a Notion database's pages into messages.
	Notion *Notion
}

// service names this package in its ConfigErrors.
const service = "ingress"

// Default returns c with every setting left zero set to its default, and
// the nested configs' URLs and numbers normalised (see their withDefaults).
// It never fails and never checks. The nested configs are copies: the
// caller's are left as they were.
func (c Config) Default() Config {
	if c.PublishTimeout == 0 {
		c.PublishTimeout = DefaultPublishTimeout
	}
	if c.Notion != nil {
		n := c.Notion.withDefaults()
		c.Notion = &n
	}
	return c
}

// Validate checks c as it will run (call it on Default's result): nil, or
// every setting refused, each a *contract.ConfigError, joined, so that
// they can all be fixed in one go.
func (c Config) Validate() error {
	var errs []error
	if c.PublishTimeout <= 0 {
		errs = append(errs, bad("PublishTimeout", c.PublishTimeout, "must be more than 0s"))
	}
	if c.Notion != nil {
		errs = append(errs, c.Notion.validate())
	}
	return errors.Join(errs...)
}

// bad is ingress's refusal of setting (its field path in Config); value
// is nil for secrets and for settings left empty.
func bad(setting string, value any, reason string) *contract.ConfigError {
	return contract.BadSetting(service, setting, value, reason)
}

// Ingress publishes inbound messages.
type Ingress struct {
	cfg Config
	js  jetstream.JetStream
	log zerolog.Logger
	// inbox admits and publishes every channel's messages: who may
	// talk is the configured numbers and chats, and, once Run has opened
	// it, the people paired in.
	inbox *Inbox
}

// New returns an ingress publishing through js.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Ingress, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if js == nil {
		return nil, errors.New("ingress: no JetStream")
	}
	i := &Ingress{cfg: cfg, js: js, log: log.With().Str("svc", "ingress").Logger()}
	i.inbox = NewInbox(js, access.NewAllowlist(nil, allowed(cfg.Channels)), cfg.PublishTimeout, i.log)
	return i, nil
}

// Handler serves the provider webhooks, which authenticate themselves
// (Twilio's signature, a channel's own check, as Telegram's secret
// token): they must be reachable by the providers.
func (i *Ingress) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, ch := range i.cfg.Channels {
		if r, ok := ch.(channel.Router); ok {
			for route, h := range r.Routes(inboxHost{i.inbox}) {
				mux.Handle(route, h)
			}
		}
	}
	return mux
}

// Pages serves the pages of the channels people use in a browser (the web
// chat, a channel.Pager); nil when there are none. Their people are
// whoever can reach them: put them behind the web chat's own access
// check.
func (i *Ingress) Pages() http.Handler {
	var mux *http.ServeMux
	for _, ch := range i.cfg.Channels {
		if p, ok := ch.(channel.Pager); ok {
			if mux == nil {
				mux = http.NewServeMux()
			}
			for route, h := range p.Pages(inboxHost{i.inbox}) {
				mux.Handle(route, h)
			}
		}
	}
	if mux == nil {
		return nil
	}
	return mux
}

// Routes are the paths Handler serves, for mounting it on a shared mux.
func (i *Ingress) Routes() []string {
	var routes []string
	for _, ch := range i.cfg.Channels {
		if r, ok := ch.(channel.Router); ok {
			routes = append(routes, slices.Sorted(maps.Keys(r.Routes(inboxHost{i.inbox})))...)
		}
	}
	return routes
}

// Publish stores one inbound message in JetStream (Inbox.Publish).
func (i *Ingress) Publish(ctx context.Context, in contract.Inbound) error {
	return i.inbox.Publish(ctx, in)
}

// messagesIn counts the people's messages stored in IN, by channel.
var messagesIn = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "textslash_messages_in_total",
	Help: "Messages from people stored for processing, by channel (retried webhooks counted once).",
}, []string{"channel"})

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

// allowed are the ids each channel's configuration allows, by channel.
func allowed(chs []channel.Channel) map[string][]string {
	ids := map[string][]string{}
	for _, ch := range chs {
		ids[ch.Name()] = append(ids[ch.Name()], ch.Allowed()...)
	}
	return ids
}

// inboxHost is the Host the channels of Config.Channels publish with: the
// inbox's admission (the allowlist, pairing codes), then its publish. It
// takes a person of any of them: Twilio's webhook, WhatsApp's route,
// takes SMS's people too. (A plug-in channel's Host, the kit, takes its
// own people only.)
type inboxHost struct{ inbox *Inbox }

func (h inboxHost) Publish(ctx context.Context, in contract.Inbound) error {
	return h.inbox.Take(ctx, in)
}
