package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// inboxDir is where a person's attachments land in their workspace.
const inboxDir = "inbox"

// attach copies a job's attachments into the workspace's inbox, through
// ingress's media fetch service (the runner holds no provider
// credentials), and returns their paths relative to the workspace. An
// attachment that cannot be fetched is logged and counted in failed.
func (r *Runner) attach(ctx context.Context, log zerolog.Logger, job contract.Job, dir string) (paths []string, failed int) {
	if len(job.Media) == 0 {
		return nil, 0
	}
	store, err := r.js.ObjectStore(ctx, contract.BucketMedia)
	if err != nil {
		log.Error().Err(err).Msg("media store; attachments skipped")
		return nil, len(job.Media)
	}
	// The workspace is the agent's: inbox may be a link anywhere.
	if err := mkdirBeneath(dir, inboxDir, r.user); err != nil {
		log.Error().Err(err).Msg("inbox; attachments skipped")
		return nil, len(job.Media)
	}
	for n, m := range job.Media {
		img, err := r.fetch(ctx, job.User, m)
		if err != nil {
			log.Warn().Err(err).Int("attachment", n+1).Msg("attachment not fetched")
			failed++
			continue
		}
		data, err := store.GetBytes(ctx, img.ID)
		if err != nil {
			log.Warn().Err(err).Str("object", img.ID).Msg("attachment not in the media store")
			failed++
			continue
		}
		name := filepath.Join(inboxDir, fmt.Sprintf("%s-%d%s", shortID(job.ID), n+1, extension(img.ContentType)))
		if err := writeBeneath(dir, name, data, 0o644, r.user); err != nil {
			log.Warn().Err(err).Msg("attachment not written")
			failed++
			continue
		}
		paths = append(paths, name)
	}
	return paths, failed
}

func (r *Runner) fetch(ctx context.Context, u contract.User, m contract.Media) (contract.Image, error) {
	var img contract.Image
	data, err := contract.Encode(&contract.MediaFetch{User: u, Media: m})
	if err != nil {
		return img, err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	resp, err := r.js.Conn().RequestMsgWithContext(ctx, contract.NewMsg(ctx, contract.SubjectMediaFetch, data))
	if err != nil {
		return img, fmt.Errorf("media fetch: %w", err)
	}
	if code := resp.Header.Get(micro.ErrorCodeHeader); code != "" {
		return img, fmt.Errorf("media fetch: %s %s", code, resp.Header.Get(micro.ErrorHeader))
	}
	if err := json.Unmarshal(resp.Data, &img); err != nil || img.ID == "" {
		return img, fmt.Errorf("media fetch: bad reply %q", resp.Data)
	}
	return img, nil
}

func extension(contentType string) string {
	if contentType == "image/png" {
		return ".png"
	}
	return ".jpeg"
}
