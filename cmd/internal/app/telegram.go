package app

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/telegram"
	"github.com/textslash/textslash/contract"
)

// telegramConfig is the Telegram channel's configuration (telegram.Config,
// which checks it) from the settings, one for ingress's side and egress's.
// By hand: where the media service is read when images are uploaded,
// this process's listener (without PUBLIC_URL media runs here: checked by
// validateTelegram).
func (c *config) telegramConfig() telegram.Config {
	tc := telegram.Config{LocalURL: c.localURL()}
	c.put(telegram.Channel, &tc)
	return tc
}

// checkTelegram is the Telegram channel's check of its settings, when
// Telegram is on.
func (c *config) checkTelegram() error {
	if !c.telegram() {
		return nil
	}
	return c.telegramConfig().Default().Validate()
}

// telegramChannels are the channels on the port the built-in services run
// (Telegram's, when on): for ingress, with the bucket of its poll's lease
// (js non-nil); for egress, which only sends, without.
func (c *config) telegramChannels(ctx context.Context, js jetstream.JetStream, log zerolog.Logger) ([]channel.Channel, error) {
	if !c.telegram() {
		return nil, nil
	}
	var leases jetstream.KeyValue
	if js != nil {
		var err error
		if leases, err = js.KeyValue(ctx, contract.BucketTelegram); err != nil {
			return nil, fmt.Errorf("bucket %s: %w", contract.BucketTelegram, err)
		}
	}
	tg, err := telegram.New(c.telegramConfig(), leases, log)
	if err != nil {
		return nil, explain(err)
	}
	return []channel.Channel{tg}, nil
}
