package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	api "github.com/slack-go/slack"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/kit"
)

// maxUploadBytes is the most egress reads of one file to upload (Rules'
// MaxFileBytes).
const maxUploadBytes = 50 << 20

// upload shares m's images and files in ch with m's text: each file read
// from the media store (Kit.Media) and uploaded (files.getUploadURLExternal,
// then its bytes), then all shared in one message
// (files.completeUploadExternal) whose text is the initial comment, or, with
// choices, blocks with buttons. Each file's title is its name, by which
// Find knows the share again. Files uploaded but not shared (a failure
// before the share) are never shown; another try uploads them anew.
func (s *Sender) upload(ctx context.Context, u contract.User, ch string, m egress.Message) (string, error) {
	var files []api.FileSummary
	for _, ref := range m.Media {
		a, err := s.read(ctx, ref)
		if err != nil {
			return "", err
		}
		up, err := s.client.GetUploadURLExternalContext(ctx, api.GetUploadURLExternalParameters{FileName: a.Name, FileSize: len(a.Data)})
		if err != nil {
			return "", sendError(err)
		}
		if err := s.client.UploadToURL(ctx, api.UploadToURLParameters{UploadURL: up.UploadURL, Reader: bytes.NewReader(a.Data), Filename: a.Name}); err != nil {
			return "", sendError(err)
		}
		files = append(files, api.FileSummary{ID: up.FileID, Title: a.Name})
	}
	params := api.CompleteUploadExternalParameters{Files: files, Channel: ch}
	t := text(u, ch, m)
	if len(m.Choices) > 0 {
		params.Blocks = api.Blocks{BlockSet: blocks(t, m.Choices)}
	} else {
		params.InitialComment = t
	}
	done, err := s.client.CompleteUploadExternalContext(ctx, params)
	if err != nil {
		return "", sendError(err)
	}
	if len(done.Files) == 0 {
		return "", &egress.SendError{Err: fmt.Errorf("slack: files.completeUploadExternal shared no file")}
	}
	return done.Files[0].ID, nil
}

// read is one image or file of a reply from the media store. Gone
// (expired), not a stored link, or too large: another try cannot help.
func (s *Sender) read(ctx context.Context, ref string) (kit.Attachment, error) {
	a, err := s.media(ctx, ref)
	switch {
	case errors.Is(err, kit.ErrNotStored) || errors.Is(err, jetstream.ErrObjectNotFound):
		return a, &egress.SendError{Err: fmt.Errorf("file for upload: %w", err), Permanent: true}
	case err != nil:
		return a, &egress.SendError{Err: fmt.Errorf("file for upload: %w", err)}
	case len(a.Data) > maxUploadBytes:
		return a, &egress.SendError{Err: fmt.Errorf("file for upload: larger than %d bytes", maxUploadBytes), Permanent: true}
	case len(a.Data) == 0:
		return a, &egress.SendError{Err: fmt.Errorf("file for upload: empty"), Permanent: true}
	}
	return a, nil
}
