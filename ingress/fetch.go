package ingress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
)

// mediaMaxBytes caps an attachment: Twilio passes on up to 5 MB per image
// (16 MB for other media), Telegram 20 MB per file to bots.
const mediaMaxBytes = 16 << 20

// Run serves the media fetch service (contract.SubjectMediaFetch) and
// polls Notion (when configured) until ctx ends: the runner asks the
// service for the images people send, which only ingress, holding
// Twilio's and Telegram's credentials, may download. Webhooks are served
// by Handler; Run is not needed for them.
func (i *Ingress) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if i.cfg.Notion != nil {
		g.Go(func() error { return i.pollNotion(ctx) })
	}
	g.Go(func() error { return i.serveFetch(ctx) })
	return g.Wait()
}

// serveFetch serves the media fetch service until ctx ends.
func (i *Ingress) serveFetch(ctx context.Context) error {
	if i.cfg.Twilio == nil && i.cfg.Telegram == nil {
		<-ctx.Done()
		return nil
	}
	if err := i.allow.Open(ctx, i.js); err != nil {
		return err
	}
	if (i.cfg.Twilio == nil || i.cfg.Twilio.AccountSID == "") && i.cfg.Telegram == nil {
		<-ctx.Done()
		return nil
	}
	store, err := i.js.ObjectStore(ctx, contract.BucketMedia)
	if err != nil {
		return fmt.Errorf("object store %s: %w", contract.BucketMedia, err)
	}
	svc, err := micro.AddService(i.js.Conn(), micro.Config{
		Name:        "ingress",
		Version:     "1.0.0",
		Description: "textslash ingress: copies people's attachments from Twilio and Telegram into the media store",
		QueueGroup:  "ingress",
	})
	if err != nil {
		return fmt.Errorf("media fetch service: %w", err)
	}
	fetch := func(req micro.Request) {
		// Downloads may be slow: one at a time would hold up everyone.
		go i.fetchMedia(ctx, store, req)
	}
	if err := svc.AddEndpoint("media-fetch", micro.HandlerFunc(fetch), micro.WithEndpointSubject(contract.SubjectMediaFetch)); err != nil {
		_ = svc.Stop()
		return fmt.Errorf("media fetch endpoint: %w", err)
	}
	<-ctx.Done()
	return svc.Stop()
}

func (i *Ingress) fetchMedia(ctx context.Context, store jetstream.ObjectStore, req micro.Request) {
	var f contract.MediaFetch
	if err := contract.Decode(req.Data(), &f); err != nil {
		_ = req.Error("400", err.Error(), nil)
		return
	}
	// The runner asks with the trace of the message the media came with.
	log := contract.TraceLog(i.log, contract.Trace(nats.Header(req.Headers()))).With().Str("user", f.User.Key()).Logger()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var data []byte
	var err error
	t := i.cfg.Twilio
	switch {
	case strings.HasPrefix(f.Media.URL, telegramFile) && i.cfg.Telegram != nil && f.User.Channel == contract.ChannelTelegram:
		data, err = i.telegramDownload(ctx, strings.TrimPrefix(f.Media.URL, telegramFile))
	case t != nil && t.AccountSID != "" && strings.HasPrefix(f.Media.URL, t.APIURL+"/2010-04-01/Accounts/"+t.AccountSID+"/"):
		data, err = i.download(ctx, f.Media.URL, func(r *http.Request) { r.SetBasicAuth(t.AccountSID, t.AuthToken) })
	default:
		log.Warn().Str("url", f.Media.URL).Msg("media fetch refused: not a media URL of this Twilio account or Telegram bot")
		_ = req.Error("403", "not a media URL of this Twilio account or Telegram bot", nil)
		return
	}
	if errors.Is(err, errTooLarge) {
		log.Info().Str("url", f.Media.URL).Msg("attachment over the size limit; not fetched")
		_ = req.Error("413", err.Error(), nil)
		return
	}
	if err != nil {
		log.Warn().Err(err).Str("url", f.Media.URL).Msg("media fetch failed")
		_ = req.Error("502", err.Error(), nil)
		return
	}
	// Images are what they are; other files keep the type the provider
	// gave unless it claims an image they are not.
	ct := http.DetectContentType(data)
	if !contract.IsImage(ct) && f.Media.ContentType != "" && !contract.IsImage(f.Media.ContentType) {
		ct = f.Media.ContentType
	}
	img, err := contract.PutFile(ctx, store, ct, f.Media.Name, data)
	if err != nil {
		log.Error().Err(err).Msg("media store")
		_ = req.Error("503", "media store unavailable", nil)
		return
	}
	log.Info().Str("object", img.ID).Int("size", img.Size).Msg("attachment fetched")
	_ = req.RespondJSON(img)
}

// download GETs url, with auth adding the credentials; errTooLarge for
// a body over mediaMaxBytes.
func (i *Ingress) download(ctx context.Context, url string, auth func(*http.Request)) ([]byte, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if auth != nil {
		// Twilio redirects to its CDN; net/http drops the credentials
		// when the redirect leaves the host.
		auth(r)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("answered %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, mediaMaxBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > mediaMaxBytes {
		return nil, errTooLarge
	}
	return data, nil
}
