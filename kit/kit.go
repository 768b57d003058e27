// Package kit runs a channel written on the port (channel.Channel) as its
// own program, or as a part of the all-in-one, with every guarantee
// textslash's built-in channels have. Open readies it against
// textslash's NATS; Run runs the channel's inbound side with the kit as
// its channel.Host, and delivers the events for its people through the
// same pusher the built-in channels use (egress.Pusher): per-person order,
// paging with MORE, progress coalesced, retries honouring RetryAfter,
// dead letters, and no message sent twice across restarts, each reply's
// images and files read from the channel's own media store into
// channel.Message.Attachments. Publish goes through the same inbox as
// ingress's (ingress.Inbox): the allowlist, pairing codes, JetStream's
// dedupe by the message id. channels.md at the repository's root is the
// same contract for channels in other languages.
package kit

import (
	"context"
	"errors"
	"fmt"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/ingress"
)

// Kit runs one plug-in channel against textslash's NATS.
type Kit struct {
	ch     channel.Channel
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
func Open(ctx context.Context, nc *nats.Conn, ch channel.Channel, log zerolog.Logger) (*Kit, error) {
	if nc == nil {
		return nil, errors.New("kit: no NATS connection")
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("kit: jetstream: %w", err)
	}
	name, allowed := ch.Name(), ch.Allowed()
	log = log.With().Str("svc", "channel").Str("channel", name).Logger()
	allow := access.NewChannelAllowlist(name, allowed)
	var errs []error
	for _, id := range allowed {
		if _, err := contract.NewUser(name, id); err != nil && id != channel.Anyone {
			errs = append(errs, contract.BadSetting("kit", "Channel.Allowed", id, "not a person id: letters, digits, - and _, at most 64"))
		}
	}
	var retry channel.Retry
	if r, ok := ch.(channel.Retrier); ok {
		retry = r.Retry()
	}
	k := &Kit{ch: ch, js: js, log: log, inbox: ingress.NewInbox(js, allow, 0, log)}
	if s, ok := ch.(channel.Sender); ok {
		k.pusher, err = egress.NewPusher(js, allow, retry, log, egress.Channel{Name: name, Rules: ch.Rules(), Sender: s, MediaURL: MediaRef, Attach: k.attach})
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := k.inbox.Open(ctx); err != nil {
		return nil, fmt.Errorf("kit: people paired in (has textslash provision run?): %w", err)
	}
	return k, nil
}

// Publish is the channel.Host's: the message's Nats-Msg-Id is
// <channel>.<id>:<in.ID>, and the allowlist and pairing codes are the
// inbox's (ingress.Inbox).
func (k *Kit) Publish(ctx context.Context, in contract.Inbound) error {
	if in.User.Channel != k.ch.Name() {
		return fmt.Errorf("%w: a person of channel %q, not %q", contract.ErrInvalidUser, in.User.Channel, k.ch.Name())
	}
	if err := in.User.Validate(); err != nil {
		return err
	}
	return k.inbox.Take(ctx, in)
}

// Run runs the channel (its Run, with the kit as its Host), delivers its
// events (ts.ev.<name>.>, from its durable consumer egress-<name>, made or
// updated here) through its Send when it is a channel.Sender (a channel
// that is none is pulled: its people read their events themselves), and
// answers the runner's media fetches
// for its people (ts.svc.media.fetch.<name>) when it is a
// channel.Fetcher, until ctx ends or one of them fails; events in hand
// then are handed back for the next run.
func (k *Kit) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return k.ch.Run(ctx, k) })
	if k.pusher != nil { // a Sender
		g.Go(func() error { return k.pusher.Run(ctx) })
	}
	if f, ok := k.ch.(channel.Fetcher); ok {
		fetch := func(ctx context.Context, m contract.MediaFetch) ([]byte, string, error) {
			return f.Fetch(ctx, m.Media.URL)
		}
		name := k.ch.Name()
		g.Go(func() error {
			return ingress.ServeFetch(ctx, k.js, "channel-"+name, []string{name}, fetch, k.log)
		})
	}
	return g.Wait()
}
