package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner/sandbox"
)

// inboxDir is where a person's attachments land in their workspace.
const inboxDir = "inbox"

// attachment is a file the person sent, saved in their workspace.
type attachment struct {
	Path  string // relative to the workspace
	Media contract.Media
}

// attach copies a job's attachments into the workspace's inbox and returns
// them with their paths relative to the workspace. Files are fetched
// through the channel's media fetch service (the runner holds no provider
// credentials), which puts them in the media store of the person's
// channel (contract.MediaBucketOf), or are there already when ingress took
// them (contract.StoredMedia). An attachment that cannot be had is logged and
// counted in failed; one over the size limit is also told to the person
// (tell). Files are written readable, never executable: they are saved,
// not run.
func (r *Runner) attach(ctx context.Context, job contract.Job, dir string, tell func(key, text string)) (atts []attachment, failed int) {
	log := zerolog.Ctx(ctx)
	if len(job.Media) == 0 {
		return nil, 0
	}
	store, err := r.js.ObjectStore(ctx, contract.MediaBucketOf(job.User.Channel))
	if err != nil {
		log.Error().Err(err).Msg("media store; attachments skipped")
		return nil, len(job.Media)
	}
	// The workspace is the agent's: inbox may be a link anywhere.
	if err := sandbox.MkdirBeneath(dir, inboxDir, r.user); err != nil {
		log.Error().Err(err).Msg("inbox; attachments skipped")
		return nil, len(job.Media)
	}
	for n, m := range job.Media {
		obj, err := r.fetch(ctx, job.User, m)
		if err != nil {
			log.Warn().Err(err).Int("attachment", n+1).Msg("attachment not fetched")
			var fe *fetchError
			if errors.As(err, &fe) && fe.code == "413" {
				tell(fmt.Sprintf("too-large-%d", n+1), fmt.Sprintf(MsgFileTooLarge, describe(m), fe.msg))
			}
			failed++
			continue
		}
		data, err := store.GetBytes(ctx, obj.ID)
		if err != nil {
			log.Warn().Err(err).Str("object", obj.ID).Msg("attachment not in the media store")
			failed++
			continue
		}
		name := filepath.Join(inboxDir, inboxName(job.ID, n, obj))
		if err := sandbox.WriteBeneath(dir, name, data, 0o644, r.user); err != nil {
			log.Warn().Err(err).Msg("attachment not written")
			failed++
			continue
		}
		log.Info().Str("path", name).Str("content_type", obj.ContentType).Int("size", len(data)).Bool("voice", m.Voice).Msg("attachment saved")
		atts = append(atts, attachment{Path: name, Media: m})
	}
	return atts, failed
}

// MsgFileTooLarge tells the person a file was not taken: what it was, and
// the limit ("larger than 16 MB").
const MsgFileTooLarge = "I couldn't take %s: it is %s, the most a file may be."

// fetchError is the media fetch service's refusal: its code and message.
type fetchError struct{ code, msg string }

func (e *fetchError) Error() string { return "media fetch: " + e.code + " " + e.msg }

// describe names an attachment for the person.
func describe(m contract.Media) string {
	switch {
	case m.Name != "":
		return fmt.Sprintf("%q", m.Name)
	case m.Voice:
		return "your voice note"
	}
	return "your " + strings.TrimSpace(strings.SplitN(m.ContentType, ";", 2)[0]) + " file"
}

// inboxName is the n-th (from 0) attachment's file name in the inbox: the
// job's id (whole: ids that share a beginning must not share a file) and
// its number, then the name it was sent with, made safe, or an extension
// for its type.
func inboxName(jobID string, n int, obj contract.Image) string {
	prefix := fmt.Sprintf("%s-%d", contract.SafeName(jobID), n+1)
	if obj.Name != "" && !contract.IsImage(obj.ContentType) {
		return prefix + "-" + contract.SafeName(obj.Name)
	}
	return prefix + extension(obj.ContentType)
}

func (r *Runner) fetch(ctx context.Context, u contract.User, m contract.Media) (contract.Image, error) {
	if id, ok := strings.CutPrefix(m.URL, contract.StoredMedia); ok {
		return contract.Image{ID: id, ContentType: m.ContentType, Name: m.Name}, nil
	}
	var img contract.Image
	data, err := contract.Encode(&contract.MediaFetch{User: u, Media: m})
	if err != nil {
		return img, err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	resp, err := r.js.Conn().RequestMsgWithContext(ctx, bus.NewMsg(ctx, contract.MediaFetchSubject(u.Channel), data))
	if err != nil {
		return img, fmt.Errorf("media fetch: %w", err)
	}
	if code := resp.Header.Get(micro.ErrorCodeHeader); code != "" {
		return img, &fetchError{code, resp.Header.Get(micro.ErrorHeader)}
	}
	if err := json.Unmarshal(resp.Data, &img); err != nil || img.ID == "" {
		return img, fmt.Errorf("media fetch: bad reply %q", resp.Data)
	}
	return img, nil
}

// extensions are the file extensions of the types people send most, the
// same on every machine (mime's table depends on the host's).
var extensions = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpeg", "image/webp": ".webp", "image/gif": ".gif",
	"audio/ogg": ".ogg", "audio/opus": ".opus", "audio/mpeg": ".mp3", "audio/mp4": ".m4a", "audio/aac": ".aac",
	"audio/amr": ".amr", "audio/webm": ".webm", "audio/wav": ".wav", "audio/x-wav": ".wav",
	"video/mp4": ".mp4", "video/webm": ".webm", "video/3gpp": ".3gp",
	"application/pdf": ".pdf", "text/plain": ".txt", "text/csv": ".csv", "application/json": ".json",
	"application/zip": ".zip", "text/markdown": ".md",
}

// extension is a file extension for contentType: ".bin" when unknown.
func extension(contentType string) string {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ".bin"
	}
	if ext, ok := extensions[t]; ok {
		return ext
	}
	if exts, _ := mime.ExtensionsByType(t); len(exts) > 0 {
		slices.Sort(exts)
		return exts[0]
	}
	return ".bin"
}
