package ingress

import (
	"context"
	"fmt"

	"github.com/textslash/textslash/channel"

	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
)

// Run serves the media fetch service (contract.SubjectMediaFetch),
// polls Notion (when configured) and runs the inbound side of each of
// Config.Channels (Telegram's: sets the webhook, or polls) until ctx
// ends: the runner asks the service for the files people send, which
// only ingress, holding the channels' credentials, may download.
// Webhooks are served by Handler.
func (i *Ingress) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if i.cfg.Notion != nil {
		g.Go(func() error { return i.pollNotion(ctx) })
	}
	for _, ch := range i.cfg.Channels {
		g.Go(func() error { return ch.Run(ctx, inboxHost{i.inbox}) })
	}
	g.Go(func() error { return i.serveFetch(ctx) })
	return g.Wait()
}

// serveFetch serves the media fetch service of the channels ingress
// holds the credentials of until ctx ends.
func (i *Ingress) serveFetch(ctx context.Context) error {
	if len(i.cfg.Channels) == 0 {
		<-ctx.Done()
		return nil
	}
	if err := i.inbox.Open(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: a clean stop
		}
		return err
	}
	var channels []string
	for _, ch := range i.cfg.Channels {
		if _, ok := ch.(channel.Fetcher); ok {
			channels = append(channels, ch.Name())
		}
	}
	if len(channels) == 0 {
		<-ctx.Done()
		return nil
	}
	err := ServeFetch(ctx, i.js, "ingress", channels, i.fetchMedia, i.log)
	if ctx.Err() != nil {
		return nil // stopped, maybe while it started (the media store not yet open): a clean stop
	}
	return err
}

// fetchMedia downloads an attachment with the person's channel (a
// channel.Fetcher); ErrNotMine for any other.
func (i *Ingress) fetchMedia(ctx context.Context, f contract.MediaFetch) ([]byte, string, error) {
	for _, ch := range i.cfg.Channels {
		if fetcher, ok := ch.(channel.Fetcher); ok && ch.Name() == f.User.Channel {
			return fetcher.Fetch(ctx, f.Media.URL)
		}
	}
	return nil, "", fmt.Errorf("%w: not a media URL of a channel of this ingress", channel.ErrNotMine)
}
