// Package ingress is textslash's HTTP edge for inbound messages. It checks
// who is speaking, publishes one inbound event per message to JetStream and
// answers the caller as soon as JetStream has it. It decides nothing else.
package ingress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// Config of the ingress service.
type Config struct {
	// MaxBodyBytes caps a request body; larger ones get 413.
	MaxBodyBytes int64
	// PublishTimeout bounds the wait for JetStream's acknowledgement.
	PublishTimeout time.Duration
	// WebChat serves the local web chat page and its message endpoint.
	WebChat bool
}

func (c *Config) defaults() {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = 64 << 10
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 900 * time.Millisecond
	}
}

// Ingress publishes inbound messages.
type Ingress struct {
	cfg Config
	js  jetstream.JetStream
	log zerolog.Logger
}

// New returns an ingress publishing through js.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Ingress, error) {
	cfg.defaults()
	if js == nil {
		return nil, errors.New("ingress: no JetStream")
	}
	return &Ingress{cfg: cfg, js: js, log: log.With().Str("svc", "ingress").Logger()}, nil
}

// Handler serves every inbound route.
func (i *Ingress) Handler() http.Handler {
	mux := http.NewServeMux()
	if i.cfg.WebChat {
		mux.HandleFunc("GET /{$}", i.webPage)
		mux.HandleFunc("POST /api/messages", i.webMessage)
	}
	return mux
}

// Publish stores one inbound message in JetStream, deduplicated by the
// user and provider message id, and returns once JetStream acknowledged it.
func (i *Ingress) Publish(ctx context.Context, in contract.Inbound) error {
	if err := in.User.Validate(); err != nil {
		return err
	}
	if in.ID == "" {
		return fmt.Errorf("%w: no message id", contract.ErrInvalidPayload)
	}
	if in.At.IsZero() {
		in.At = time.Now().UTC()
	}
	data, err := contract.Encode(&in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, i.cfg.PublishTimeout)
	defer cancel()
	ack, err := i.js.Publish(ctx, contract.InboundSubject(in.User), data,
		jetstream.WithMsgID(contract.MsgID(in.User, in.ID)))
	if err != nil {
		return fmt.Errorf("publish inbound: %w", err)
	}
	i.log.Info().Str("user", in.User.Key()).Str("job_id", in.ID).Uint64("seq", ack.Sequence).
		Bool("duplicate", ack.Duplicate).Int("text_len", len(in.Text)).Msg("inbound")
	return nil
}
