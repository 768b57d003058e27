package egress

import (
	"context"
	"errors"
	"fmt"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
)

// Channel is one channel the pusher delivers to, as a plug-in channel
// (the kit) gives it: the built-in channels are the same pusher's
// channels, with their providers' extras (Twilio's delivery status and
// reply window).
type Channel struct {
	// Name is the channel's subject token: its people are
	// contract.User{Channel: Name}, its events ts.ev.<Name>.>, its
	// consumer egress-<Name>.
	Name string
	// Rules of the channel; zero limits take PluginRules's.
	Rules channel.Rules
	// Sender sends; it may also be a Finder, a Typer.
	Sender channel.Sender
	// MediaURL is the link to an image or file that the channel's
	// messages carry in Message.Media.
	MediaURL func(contract.Image) string
	// Attach, when set, reads the image or file a MediaURL link names
	// into the message's Attachments before each send (a channel that
	// uploads them); its errors are *channel.SendError.
	Attach func(ctx context.Context, ref string) (channel.Attachment, error)
}

// Pusher delivers the events of its channels to their people: per-person
// order, paging with MORE, progress coalesced (Rules.ProgressEvery),
// retries with backoff (SendError.RetryAfter honoured), dead letters
// (ts.ev.<ch>.<id>.undelivered), and each message sent once across
// restarts (the egress bucket; a crash between a send and its record is
// covered when the Sender is a Finder). Egress runs the built-in
// channels on one; the kit runs a plug-in channel on another.
type Pusher struct {
	p *pusher
}

// NewPusher delivers chs's events read through js to the people allow
// allows (open it: the people paired in count once it follows them);
// retry bounds the tries of a failed send (zero: its defaults). A
// channel's Rules refused are a *contract.ConfigError each, joined.
func NewPusher(js jetstream.JetStream, allow *access.Allowlist, retry channel.Retry, log zerolog.Logger, chs ...Channel) (*Pusher, error) {
	if js == nil || allow == nil {
		return nil, errors.New("egress: no JetStream or no allowlist")
	}
	retry = retry.WithDefaults()
	errs := retry.Validate("egress", "Retry")
	p := &pusher{js: js, log: log, retry: retry, channels: map[string]outlet{}, allow: allow, typing: typing{log: log}}
	for _, ch := range chs {
		path := "Channel[" + ch.Name + "]"
		if _, err := contract.NewUser(ch.Name, "x"); err != nil {
			errs = append(errs, bad(path+".Name", ch.Name, "want a subject token: letters, digits, - and _"))
		}
		if ch.Sender == nil {
			errs = append(errs, bad(path+".Sender", nil, "required"))
		}
		if ch.MediaURL == nil {
			errs = append(errs, bad(path+".MediaURL", nil, "required"))
		}
		ch.Rules = ch.Rules.WithDefaults(channel.PluginRules)
		errs = append(errs, ch.Rules.Validate("egress", path+".Rules")...)
		p.channels[ch.Name] = outlet{rules: ch.Rules, sender: ch.Sender, mediaURL: ch.MediaURL, attach: ch.Attach}
	}
	for _, ch := range chs {
		if b := contract.EgressBucketOf(ch.Name); p.bucket == "" {
			p.bucket = b
		} else if b != p.bucket {
			errs = append(errs, bad("Channel["+ch.Name+"].Name", ch.Name, "a pusher carries the built-in channels or one plug-in channel: each plug-in channel keeps what it sent in a bucket of its own"))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Pusher{p: p}, nil
}

// Run delivers until ctx ends; it makes (or updates) each channel's
// durable consumer egress-<name> (bus.EgressConsumer), and hands
// back, unsent, the events it holds when ctx ends.
func (p *Pusher) Run(ctx context.Context) error { return p.p.runBucket(ctx) }

// runBucket opens the channels' egress bucket (contract.EgressBucketOf)
// and runs the pusher on it.
func (p *pusher) runBucket(ctx context.Context) error {
	kv, err := p.js.KeyValue(ctx, p.bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", p.bucket, err)
	}
	return p.run(ctx, kv)
}
