// Package egress delivers events to people, one channel at a time, with
// each channel's own rules. Adding a channel adds a consumer here; nothing
// upstream changes.
package egress

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Config of the egress service.
type Config struct {
	// WebChat streams web chat users' events to their browsers.
	WebChat bool
	// KeepAlive is the interval of SSE comments that keep idle streams open.
	KeepAlive time.Duration
}

// Egress runs every enabled channel.
type Egress struct {
	cfg Config
	js  jetstream.JetStream
	log zerolog.Logger
}

// New returns an egress reading events through js.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Egress, error) {
	if js == nil {
		return nil, errors.New("egress: no JetStream")
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	return &Egress{cfg: cfg, js: js, log: log.With().Str("svc", "egress").Logger()}, nil
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

// Run delivers through the channels that push (none yet besides the web
// chat, which is pulled by browsers) until ctx ends.
func (e *Egress) Run(ctx context.Context) error {
	<-ctx.Done()
	return nil
}
