package discord

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/kit"
)

// Serve runs the Discord channel for cfg against textslash's NATS (nc
// logged in as the channel-discord user, or admin) until ctx ends: the
// kit opened with the channel, the gateway taking people's messages and
// button presses, and the kit delivering their events. An error when the
// settings are refused, the streams are not there (textslash provision),
// or the gateway refuses the bot (a wrong token).
func Serve(ctx context.Context, nc *nats.Conn, cfg Config, log zerolog.Logger) error {
	d, err := New(cfg, log)
	if err != nil {
		return err
	}
	k, err := kit.Open(ctx, nc, d.Channel(), log)
	if err != nil {
		return fmt.Errorf("discord: %w", err)
	}
	d.Use(k)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.Run(ctx) })
	g.Go(func() error { return k.Run(ctx) })
	return g.Wait()
}
