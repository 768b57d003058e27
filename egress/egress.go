// Package egress delivers events to people, one channel at a time, with
// each channel's own rules. Adding a channel adds a consumer here; nothing
// upstream changes.
package egress

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/egress/notionmirror"
)

// Egress runs every enabled channel.
type Egress struct {
	cfg  Config
	js   jetstream.JetStream
	log  zerolog.Logger
	push *pusher // channels that push; nil when none is configured
}

// New returns an egress reading events through js: cfg with its defaults,
// refused (contract.ErrConfig) when Validate refuses it.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Egress, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if js == nil {
		return nil, errors.New("egress: no JetStream")
	}
	e := &Egress{cfg: cfg, js: js, log: log.With().Str("svc", "egress").Logger()}
	var errs []error
	for _, ch := range cfg.Channels {
		errs = append(errs, e.add(ch))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return e, nil
}

// add adds ch, a channel.Sender and a channel.Linker, to e's pusher, its
// links signed with cfg's Signer under its MediaBase.
func (e *Egress) add(ch channel.Channel) error {
	sender, ok := ch.(channel.Sender)
	if !ok {
		return fmt.Errorf("egress: channel %s is no channel.Sender: nothing can be pushed to it (a channel whose people pull their events runs with ingress alone)", ch.Name())
	}
	linker, ok := ch.(channel.Linker)
	if !ok {
		return fmt.Errorf("egress: channel %s is no channel.Linker: its images would have no links (a channel that uploads them runs with the kit)", ch.Name())
	}
	var retry channel.Retry
	if r, ok := ch.(channel.Retrier); ok {
		retry = r.Retry()
	}
	rules := ch.Rules().WithDefaults(channel.PluginRules)
	if err := errors.Join(rules.Validate(ch.Name(), "Rules")...); err != nil {
		return err
	}
	base, signer := linker.MediaBase(), e.cfg.Signer
	o := outlet{rules: rules, sender: sender, mediaURL: func(img contract.Image) string { return base + signer.URL(img, time.Now()) }}
	if w, ok := ch.(channel.Windowed); ok {
		closed, template := w.Window()
		o.window = &window{closed: closed, template: template}
	}
	p := e.pusher(retry.WithDefaults())
	if r, ok := ch.(channel.Reporter); ok && r.SentWait() > 0 {
		o.waitSent = true
		if p.status == nil {
			p.status = newSentWaiter(r.SentWait())
		}
	}
	p.channels[ch.Name()] = o
	return nil
}

// pusher returns the pusher of the channels that push, made at the first
// call; the retry bounds of the first channel apply to all.
func (e *Egress) pusher(r channel.Retry) *pusher {
	if e.push == nil {
		e.push = &pusher{js: e.js, log: e.log, retry: r, channels: map[string]outlet{}, bucket: contract.BucketEgress,
			allow: allowlist(e.cfg), typing: typing{log: e.log}}
	}
	return e.push
}

// allowlist is who the configuration allows to be answered, by channel:
// the numbers on WhatsApp and SMS, each other channel's own (the chats on
// Telegram).
func allowlist(cfg Config) *access.Allowlist {
	ids := map[string][]string{}
	for _, ch := range cfg.Channels {
		ids[ch.Name()] = append(ids[ch.Name()], ch.Allowed()...)
	}
	return access.NewAllowlist(nil, ids)
}

// Run delivers through Config.Channels and mirrors Notion tasks onto their
// pages, until ctx ends.
func (e *Egress) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if e.cfg.Notion != nil {
		g.Go(func() error { return notionmirror.Run(ctx, e.js, *e.cfg.Notion, e.cfg.Signer, e.log) })
	}
	if e.push != nil {
		g.Go(func() error { return (&Pusher{p: e.push}).Run(ctx) })
	}
	<-ctx.Done()
	return g.Wait()
}
