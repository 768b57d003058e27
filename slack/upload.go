package slack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"

	api "github.com/slack-go/slack"

	"github.com/textslash/textslash/egress"
)

// maxUploadBytes is the most egress reads of one file to upload (Rules'
// MaxFileBytes).
const maxUploadBytes = 50 << 20

// upload shares m's images and files in ch with m's text: each file read
// from the media service's link and uploaded (files.getUploadURLExternal,
// then its bytes), then all shared in one message
// (files.completeUploadExternal) whose text is the initial comment, or, with
// choices, blocks with buttons. Files uploaded but not shared (a failure
// before the share) are never shown; another try uploads them anew.
func (s *Sender) upload(ctx context.Context, a address, ch string, m egress.Message) (string, error) {
	var files []api.FileSummary
	for _, link := range m.Media {
		name, data, err := read(ctx, link)
		if err != nil {
			return "", err
		}
		up, err := s.client.GetUploadURLExternalContext(ctx, api.GetUploadURLExternalParameters{FileName: name, FileSize: len(data)})
		if err != nil {
			return "", sendError(err)
		}
		if err := s.client.UploadToURL(ctx, api.UploadToURLParameters{UploadURL: up.UploadURL, Reader: bytes.NewReader(data), Filename: name}); err != nil {
			return "", sendError(err)
		}
		files = append(files, api.FileSummary{ID: up.FileID, Title: name})
	}
	params := api.CompleteUploadExternalParameters{Files: files, Channel: ch}
	text := escape(m.Body)
	if a.channel != "" && text != "" {
		text = "<@" + a.user + "> " + text
	}
	if len(m.Choices) > 0 {
		params.Blocks = api.Blocks{BlockSet: blocks(text, m.Choices)}
	} else {
		params.InitialComment = text
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

// read fetches one file of the media service for an upload: its name (the
// link's last path element) and bytes.
func read(ctx context.Context, link string) (string, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return "", nil, &egress.SendError{Err: err, Permanent: true}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", nil, &egress.SendError{Err: fmt.Errorf("file for upload: %w", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		// Gone (expired) or refused: another try cannot help.
		return "", nil, &egress.SendError{Err: fmt.Errorf("file for upload: %s", resp.Status), Permanent: resp.StatusCode < 500, Status: resp.StatusCode}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxUploadBytes+1))
	if err != nil {
		return "", nil, &egress.SendError{Err: fmt.Errorf("file for upload: %w", err)}
	}
	if len(data) > maxUploadBytes {
		return "", nil, &egress.SendError{Err: fmt.Errorf("file for upload: larger than %d bytes", maxUploadBytes), Permanent: true}
	}
	if len(data) == 0 {
		return "", nil, &egress.SendError{Err: fmt.Errorf("file for upload: empty"), Permanent: true}
	}
	name := "file"
	if u, err := url.Parse(link); err == nil && path.Base(u.Path) != "/" && path.Base(u.Path) != "." {
		name = path.Base(u.Path)
	}
	return name, data, nil
}
