// Package egress delivers events to people, one channel at a time, with
// each channel's own rules. Adding a channel adds a consumer here; nothing
// upstream changes.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
)

// Config of the egress service.
type Config struct {
	// WebChat streams web chat users' events to their browsers.
	WebChat bool
	// Sessions checks the web chat's sessions (ingress issues them).
	Sessions contract.WebSessions
	// KeepAlive is the interval of SSE comments that keep idle streams open.
	KeepAlive time.Duration
	// Twilio, when set, delivers to WhatsApp and SMS users.
	Twilio *Twilio
	// Telegram, when set, delivers to Telegram users.
	Telegram *Telegram
	// Notion, when set, mirrors Notion tasks' runs onto their pages.
	Notion *Notion
	// Signer signs the image links egress hands out (media checks them).
	Signer contract.MediaSigner
}

// Egress runs every enabled channel.
type Egress struct {
	cfg  Config
	js   jetstream.JetStream
	log  zerolog.Logger
	push *pusher // channels that push; nil when none is configured
}

// New returns an egress reading events through js.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Egress, error) {
	if js == nil {
		return nil, errors.New("egress: no JetStream")
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	e := &Egress{cfg: cfg, js: js, log: log.With().Str("svc", "egress").Logger()}
	if cfg.Twilio != nil {
		t := *cfg.Twilio
		if err := t.validate(); err != nil {
			return nil, err
		}
		e.cfg.Twilio = &t
		e.addTwilio(t)
	}
	if cfg.Telegram != nil {
		t := *cfg.Telegram
		if err := t.validate(); err != nil {
			return nil, err
		}
		e.cfg.Telegram = &t
		if err := e.addTelegram(t); err != nil {
			return nil, err
		}
	}
	if cfg.Notion != nil {
		if err := cfg.Notion.validate(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// pusher returns the pusher of the channels that push, made at the first
// call; the retry bounds of the first channel apply to all.
func (e *Egress) pusher(r Retry) *pusher {
	if e.push == nil {
		e.push = &pusher{js: e.js, log: e.log, retry: r.withDefaults(), channels: map[string]channel{}, users: map[string]*userQueue{},
			typing: typing{log: e.log}}
	}
	return e.push
}

// Handler serves the channels that deliver over HTTP (the web chat's event
// stream).
func (e *Egress) Handler() http.Handler {
	mux := http.NewServeMux()
	if e.cfg.WebChat {
		mux.HandleFunc("GET /api/events", e.webEvents)
	}
	return mux
}

// Run delivers through the channels that push (WhatsApp, SMS, Telegram;
// the web chat is pulled by browsers) and mirrors Notion tasks onto their
// pages, until ctx ends.
func (e *Egress) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if e.cfg.Notion != nil {
		g.Go(func() error { return e.runNotion(ctx) })
	}
	if e.push != nil {
		g.Go(func() error {
			kv, err := e.js.KeyValue(ctx, contract.BucketEgress)
			if err != nil {
				return fmt.Errorf("bucket %s: %w", contract.BucketEgress, err)
			}
			e.push.kv = kv
			return e.push.run(ctx)
		})
	}
	<-ctx.Done()
	return g.Wait()
}
