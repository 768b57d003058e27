package ingress

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// Fetcher downloads the attachment f names (its URL as the channel put it
// in contract.Inbound.Media), with the channel's credentials: its bytes,
// and their content type when the provider says (else ""). ErrNotMine for
// a URL that is no attachment of the channel, ErrTooLarge for one over
// channel.MaxFetchBytes; any other error is the provider's failure.
type Fetcher func(ctx context.Context, f contract.MediaFetch) (data []byte, contentType string, err error)

// fetchTimeout bounds one download and its store.
const fetchTimeout = time.Minute

// ServeFetch answers the media fetches of channels (on
// contract.MediaFetchSubject of each; micro service name, queue group
// name) until ctx ends: each asks fetch for the attachment, stores it in
// the media store of the person's channel (contract.MediaBucketOf: media
// for a built-in channel, media-<name> for a plug-in one, each opened at
// start) and replies with its contract.Image. Refusals
// are micro errors: 400 (unreadable request), 403 (another channel's
// person, or ErrNotMine), 413 (ErrTooLarge), 502 (the provider failed),
// 503 (the store). Used by ingress for the built-in channels and by the
// kit for a plug-in one: one path.
func ServeFetch(ctx context.Context, js jetstream.JetStream, name string, channels []string, fetch Fetcher, log zerolog.Logger) error {
	stores := make(map[string]jetstream.ObjectStore, len(channels))
	for _, ch := range channels {
		bucket := contract.MediaBucketOf(ch)
		store, err := js.ObjectStore(ctx, bucket)
		if err != nil {
			return fmt.Errorf("object store %s: %w", bucket, err)
		}
		stores[ch] = store
	}
	svc, err := micro.AddService(js.Conn(), micro.Config{
		Name:        name,
		Version:     "1.0.0",
		Description: "textslash " + name + ": copies people's attachments from their channel into the media store",
		QueueGroup:  name,
	})
	if err != nil {
		return fmt.Errorf("media fetch service: %w", err)
	}
	h := micro.HandlerFunc(func(req micro.Request) {
		// Downloads may be slow: one at a time would hold up everyone.
		go serveOne(ctx, stores, fetch, log, req)
	})
	for _, ch := range channels {
		if err := svc.AddEndpoint("media-fetch-"+ch, h, micro.WithEndpointSubject(contract.MediaFetchSubject(ch))); err != nil {
			_ = svc.Stop()
			return fmt.Errorf("media fetch endpoint %s: %w", ch, err)
		}
	}
	<-ctx.Done()
	return svc.Stop()
}

// serveOne answers one media fetch of a person of one of the channels
// stores has the media store of.
func serveOne(ctx context.Context, stores map[string]jetstream.ObjectStore, fetch Fetcher, log zerolog.Logger, req micro.Request) {
	var f contract.MediaFetch
	if err := contract.Decode(req.Data(), &f); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	// The runner asks with the trace of the message the media came with.
	log = bus.TraceLog(log, bus.Trace(nats.Header(req.Headers()))).With().Str("user", f.User.Key()).Logger()
	store, ok := stores[f.User.Channel]
	if !ok || req.Subject() != contract.MediaFetchSubject(f.User.Channel) {
		log.Warn().Str("subject", req.Subject()).Msg("media fetch refused: a person of another channel")
		_ = req.Error("403", "a person of another channel", nil)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	data, declared, err := fetch(ctx, f)
	if err == nil && len(data) > channel.MaxFetchBytes {
		err = channel.ErrTooLarge
	}
	switch {
	case errors.Is(err, channel.ErrNotMine):
		log.Warn().Str("url", f.Media.URL).Msg("media fetch refused: not a media URL of this channel")
		_ = req.Error("403", err.Error(), nil)
		return
	case errors.Is(err, channel.ErrTooLarge):
		log.Info().Str("url", f.Media.URL).Msg("attachment over the size limit; not fetched")
		_ = req.Error("413", channel.ErrTooLarge.Error(), nil)
		return
	case err != nil:
		log.Warn().Err(err).Str("url", f.Media.URL).Msg("media fetch failed")
		_ = req.Error("502", err.Error(), nil)
		return
	}
	if declared == "" {
		declared = f.Media.ContentType
	}
	// Images are what they are; other files keep the type the provider
	// gave unless it claims an image they are not.
	ct := http.DetectContentType(data)
	if !contract.IsImage(ct) && declared != "" && !contract.IsImage(declared) {
		ct = declared
	}
	img, err := bus.PutFile(ctx, store, ct, f.Media.Name, data)
	if err != nil {
		log.Error().Err(err).Msg("media store")
		_ = req.Error("503", "media store unavailable", nil)
		return
	}
	log.Info().Str("object", img.ID).Int("size", img.Size).Msg("attachment fetched")
	_ = req.RespondJSON(img)
}
