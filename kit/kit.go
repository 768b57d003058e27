// Package kit is how a channel is its own program (or a part of the
// all-in-one) with every guarantee textslash's built-in channels have:
// the channel gives a Channel (its name, rules, Sender, allowlist and how
// to download its attachments), calls Publish for each message a person
// sends, and Run delivers the events for its people through the same
// pusher the built-in channels use (egress.Pusher): per-person order,
// paging with MORE, progress coalesced, retries honouring RetryAfter,
// dead letters, and no message sent twice across restarts. Publish goes
// through the same inbox as ingress's (ingress.Inbox): the allowlist,
// pairing codes, JetStream's dedupe by the message id. channels.md at the
// repository's root is the same contract for channels in other languages.
package kit

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/ingress"
)

// Channel is a plug-in channel, as the kit runs it.
type Channel struct {
	// Name is the channel's subject token ("slack"): its people are
	// contract.User{Channel: Name, ID: ...}, their messages ts.in.<Name>.<id>,
	// their events ts.ev.<Name>.<id>.<kind>.
	Name string
	// Rules: body limit, media per message, caption limit, progress
	// interval...; zero limits take egress.PluginRules's.
	Rules egress.Rules
	// Retry bounds the tries of a failed send (zero: egress's defaults,
	// 6 tries from 1 s to 30 s; a SendError's RetryAfter is waited at
	// least).
	Retry egress.Retry
	// Sender sends one message; it may also be an egress.Finder (a crash
	// between a send and its record is then not sent again) and an
	// egress.Typer.
	Sender egress.Sender
	// Allowed are the person ids allowed in; others can pair with a code
	// as on other channels.
	Allowed []string
	// Fetch downloads an attachment the channel published in
	// contract.Inbound.Media (by its URL), with the channel's own
	// credentials: the runner's media fetches for this channel are
	// answered by the kit. It returns ErrNotMine for a URL that is no
	// attachment of the channel; contentType may be "" (the URL's media's
	// is kept). Nil: the channel takes no attachments.
	Fetch func(ctx context.Context, url string) (data []byte, contentType string, err error)
}

// Host is what a plug-in channel runs with, handed to its Run the same
// way by every caller: the kit opened with the channel's Channel. The
// channel publishes what people send with it, reads replies' media from
// it, and runs its delivery (Run) beside its own inbound side, until ctx
// ends.
type Host interface {
	Publish(ctx context.Context, in contract.Inbound) error
	Media(ctx context.Context, ref string) (Attachment, error)
	Run(ctx context.Context) error
}

// Kit runs one plug-in channel against textslash's NATS.
type Kit struct {
	ch     Channel
	js     jetstream.JetStream
	inbox  *ingress.Inbox
	pusher *egress.Pusher
	log    zerolog.Logger
}

// Open readies ch on nc (logged in as the channel's NATS user, or admin):
// the streams and buckets must be there (textslash provision, or the
// all-in-one). It follows the people paired in until ctx ends, so give it
// the context of the channel's whole life. A bad Channel is refused with
// every setting named (*contract.ConfigError, joined).
func Open(ctx context.Context, nc *nats.Conn, ch Channel, log zerolog.Logger) (*Kit, error) {
	if nc == nil {
		return nil, errors.New("kit: no NATS connection")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("kit: jetstream: %w", err)
	}
	log = log.With().Str("svc", "channel").Str("channel", ch.Name).Logger()
	allow := access.NewChannelAllowlist(ch.Name, ch.Allowed)
	var errs []error
	for _, id := range ch.Allowed {
		if _, err := contract.NewUser(ch.Name, id); err != nil {
			errs = append(errs, contract.BadSetting("kit", "Channel.Allowed", id, "not a person id: letters, digits, - and _, at most 64"))
		}
	}
	pusher, err := egress.NewPusher(js, allow, ch.Retry, log, egress.Channel{Name: ch.Name, Rules: ch.Rules, Sender: ch.Sender, MediaURL: MediaRef})
	if err := errors.Join(append(errs, err)...); err != nil {
		return nil, err
	}
	k := &Kit{ch: ch, js: js, pusher: pusher, log: log, inbox: ingress.NewInbox(js, allow, 0, log)}
	if err := k.inbox.Open(ctx); err != nil {
		return nil, fmt.Errorf("kit: people paired in (has textslash provision run?): %w", err)
	}
	return k, nil
}

// Publish hands textslash one message a person sent: in.User.Channel must
// be the channel's Name and in.ID the provider's id of the message, unique
// per person (Nats-Msg-Id <channel>.<id>:<in.ID>: a provider's retry of
// the same message within 10 minutes is stored once). A person neither
// allowed nor paired in is refused with ErrNotAllowed, unless the message
// is a pairing code, which pairs them in. It returns once JetStream has
// stored the message: then answer the provider; on an error let it
// retry (but not for ErrNotAllowed).
func (k *Kit) Publish(ctx context.Context, in contract.Inbound) error {
	if in.User.Channel != k.ch.Name {
		return fmt.Errorf("%w: a person of channel %q, not %q", contract.ErrInvalidUser, in.User.Channel, k.ch.Name)
	}
	if err := in.User.Validate(); err != nil {
		return err
	}
	in, err := k.inbox.Admit(ctx, in)
	if err != nil {
		return err
	}
	return k.inbox.Publish(ctx, in)
}

// Run delivers the channel's events (ts.ev.<Name>.>, from its durable
// consumer egress-<Name>, made or updated here) through the Sender, and
// answers the runner's media fetches for the channel's people
// (ts.svc.media.fetch.<Name>) with Fetch, until ctx ends; events in hand
// then are handed back for the next run.
func (k *Kit) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return k.pusher.Run(ctx) })
	if k.ch.Fetch != nil {
		fetch := func(ctx context.Context, f contract.MediaFetch) ([]byte, string, error) {
			return k.ch.Fetch(ctx, f.Media.URL)
		}
		g.Go(func() error {
			return ingress.ServeFetch(ctx, k.js, "channel-"+k.ch.Name, []string{k.ch.Name}, fetch, k.log)
		})
	}
	return g.Wait()
}
