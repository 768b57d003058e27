package slack

import (
	"bytes"
	"context"
	"fmt"

	"github.com/textslash/textslash/channel"

	api "github.com/slack-go/slack"

	"github.com/textslash/textslash/contract"
)

// maxUploadBytes is the most egress reads of one file to upload (Rules'
// MaxFileBytes).
const maxUploadBytes = 50 << 20

// upload shares m's images and files in ch with m's text: each file
// (m.Attachments, read by the kit) checked and uploaded (files.getUploadURLExternal,
// then its bytes), then all shared in one message
// (files.completeUploadExternal) whose text is the initial comment, or, with
// choices, blocks with buttons. Each file's title is its name, by which
// Find knows the share again. Files uploaded but not shared (a failure
// before the share) are never shown; another try uploads them anew.
func (s *Sender) upload(ctx context.Context, u contract.User, ch string, m channel.Message) (string, error) {
	var files []api.FileSummary
	for _, a := range m.Attachments {
		if err := uploadable(a); err != nil {
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
		return "", &channel.SendError{Err: fmt.Errorf("slack: files.completeUploadExternal shared no file")}
	}
	return done.Files[0].ID, nil
}

// uploadable refuses a file Slack would: too large or empty, another try
// cannot help.
func uploadable(a channel.Attachment) error {
	switch {
	case len(a.Data) > maxUploadBytes:
		return &channel.SendError{Err: fmt.Errorf("file for upload: larger than %d bytes", maxUploadBytes), Permanent: true}
	case len(a.Data) == 0:
		return &channel.SendError{Err: fmt.Errorf("file for upload: empty"), Permanent: true}
	}
	return nil
}
