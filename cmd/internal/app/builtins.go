package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/telegram"
	"github.com/textslash/textslash/channels/twilio"
	"github.com/textslash/textslash/channels/webchat"
	"github.com/textslash/textslash/contract"
)

// The built-in channels on the port, Twilio's (WhatsApp and SMS),
// Telegram and the web chat, each with one configuration for ingress's
// side and egress's: ingress runs their inbound side, egress their Send
// (builtins). The web chat is ingress's alone: its browsers pull their
// events.

// twilioConfig is the WhatsApp and SMS channels' configuration
// (twilio.Config, which checks it) from the settings.
func (c *config) twilioConfig() twilio.Config {
	var tc twilio.Config
	c.put("twilio", &tc)
	return tc
}

// telegramConfig is the Telegram channel's configuration (telegram.Config,
// which checks it) from the settings. By hand: where the media service is
// read when images are uploaded, this process's listener (without
// PUBLIC_URL media runs here: checked by validateTelegram).
func (c *config) telegramConfig() telegram.Config {
	tc := telegram.Config{LocalURL: c.localURL()}
	c.put(telegram.Channel, &tc)
	return tc
}

// webchatConfig is the web chat's configuration (webchat.Config, which
// checks it) from the settings, with the process's session key and media
// signer.
func (c *config) webchatConfig(env partEnv) webchat.Config {
	wc := webchat.Config{Sessions: env.sessions, Signer: env.signer}
	c.put(webchatService, &wc)
	return wc
}

// webchatService names the web chat's settings in sets tags.
const webchatService = "webchat"

// checkChannels is the built-in channels' check of their settings, for
// those turned on.
func (c *config) checkChannels() error {
	var errs []error
	if c.twilio() {
		errs = append(errs, c.twilioConfig().Default().Validate())
	}
	if c.telegram() {
		errs = append(errs, c.telegramConfig().Default().Validate())
	}
	return errors.Join(errs...)
}

// builtins are the built-in channels the settings turn on, for ingress
// (inbound: with Telegram's bucket of its poll's lease, and the web chat)
// or for egress.
func (c *config) builtins(ctx context.Context, env partEnv, inbound bool) ([]channel.Channel, error) {
	js, log := env.js, env.log.With().Str("svc", Egress).Logger()
	if inbound {
		log = env.log.With().Str("svc", Ingress).Logger() // their lines are the service's that runs them
	}
	var chs []channel.Channel
	if c.Web && inbound {
		wc, err := webchat.New(c.webchatConfig(env), js, log)
		if err != nil {
			return nil, explain(err)
		}
		chs = append(chs, wc)
	}
	if c.twilio() {
		tw, err := twilio.New(c.twilioConfig(), js, log)
		if err != nil {
			return nil, explain(err)
		}
		chs = append(chs, tw.Channels()...)
	}
	if c.telegram() {
		var leases jetstream.KeyValue
		if inbound {
			var err error
			if leases, err = js.KeyValue(ctx, contract.BucketTelegram); err != nil {
				return nil, fmt.Errorf("bucket %s: %w", contract.BucketTelegram, err)
			}
		}
		tg, err := telegram.New(c.telegramConfig(), leases, log)
		if err != nil {
			return nil, explain(err)
		}
		chs = append(chs, tg)
	}
	return chs, nil
}
