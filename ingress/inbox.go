package ingress

import (
	"context"
	"fmt"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/contract/bus"
)

// Inbox is the one way a person's message enters textslash, for the
// built-in channels (Ingress) and plug-in ones (the kit) alike: Admit
// asks the allowlist (and pairs a stranger's code in), Publish stores the
// message in IN, deduplicated by its id.
type Inbox struct {
	js      jetstream.JetStream
	allow   *access.Allowlist
	timeout time.Duration
	log     zerolog.Logger
}

// DefaultPublishTimeout bounds the wait for JetStream's acknowledgement
// of an inbound message when the caller sets none.
const DefaultPublishTimeout = 900 * time.Millisecond

// NewInbox publishes through js, letting in whom allow allows; timeout
// bounds each publish (zero: DefaultPublishTimeout). Open allow (Open)
// for the people paired in to count and for codes to pair anyone.
func NewInbox(js jetstream.JetStream, allow *access.Allowlist, timeout time.Duration, log zerolog.Logger) *Inbox {
	if timeout <= 0 {
		timeout = DefaultPublishTimeout
	}
	return &Inbox{js: js, allow: allow, timeout: timeout, log: log}
}

// Open follows the people paired in (access.Allowlist.Open) until ctx
// ends.
func (b *Inbox) Open(ctx context.Context) error { return b.allow.Open(ctx, b.js) }

// Allows reports whether u may talk to textslash (listed, or paired in).
func (b *Inbox) Allows(u contract.User) bool { return b.allow.Allows(u) }

// Admit is in when its person may talk to textslash; when they may not
// but in's text is a pending pairing code, the message that pairs them
// in (Paired, for the dispatcher to welcome them); else ErrNotAllowed,
// and the person is told nothing.
func (b *Inbox) Admit(ctx context.Context, in contract.Inbound) (contract.Inbound, error) {
	if b.allow.Allows(in.User) {
		return in, nil
	}
	log := b.log.With().Str("user", in.User.Key()).Str("job_id", in.ID).Logger()
	ok, err := b.allow.Redeem(ctx, in.User, in.Text)
	if err != nil {
		log.Error().Err(err).Msg("pairing code not checked")
	}
	if !ok {
		return contract.Inbound{}, channel.ErrNotAllowed
	}
	log.Info().Msg("paired in with a code")
	return contract.Inbound{ID: in.ID, User: in.User, Paired: true, At: in.At}, nil
}

// Publish stores one inbound message in JetStream, deduplicated by the
// user and provider message id (Nats-Msg-Id <key>:<id>), and returns once
// JetStream acknowledged it. The message carries ctx's trace
// (contract.WithTrace), a new one if ctx has none. It asks no allowlist:
// call Admit first.
func (b *Inbox) Publish(ctx context.Context, in contract.Inbound) error {
	if contract.TraceFrom(ctx) == "" {
		ctx = contract.WithTrace(ctx, contract.NewTrace(""))
	}
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
	ctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	ack, err := bus.Publish(ctx, b.js, contract.InboundSubject(in.User), data, contract.MsgID(in.User, in.ID))
	if err != nil {
		return fmt.Errorf("publish inbound: %w", err)
	}
	if !ack.Duplicate {
		messagesIn.WithLabelValues(in.User.Channel).Inc()
	}
	log := bus.TraceLog(b.log, contract.TraceFrom(ctx))
	log.Info().Str("user", in.User.Key()).Str("job_id", in.ID).Uint64("seq", ack.Sequence).
		Bool("duplicate", ack.Duplicate).Int("text_len", len(in.Text)).Msg("inbound")
	return nil
}

// Take admits in (Admit) and stores what is let in (Publish): what a
// channel's Host does with each message a person sends.
func (b *Inbox) Take(ctx context.Context, in contract.Inbound) error {
	in, err := b.Admit(ctx, in)
	if err != nil {
		return err
	}
	return b.Publish(ctx, in)
}
