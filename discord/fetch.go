package discord

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/textslash/textslash/egress"
)

// Fetch downloads an attachment a person sent (a contract.Media URL this
// channel published): only from Discord's CDN (Config.CDNURLs), at most
// Config.MaxMediaBytes (ErrTooLarge). Its bytes and content type;
// ErrGone when the CDN no longer has it (signed URLs expire in a day).
func (d *Discord) Fetch(ctx context.Context, link string) ([]byte, string, error) {
	if !d.onCDN(link) {
		return nil, "", fmt.Errorf("%w: %.80q", ErrNotAttachment, link)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrNotAttachment, err)
	}
	resp, err := d.web.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("discord attachment: %w", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden:
		return nil, "", fmt.Errorf("%w: %s", ErrGone, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, "", fmt.Errorf("discord attachment: %s", resp.Status)
	case resp.ContentLength > d.cfg.MaxMediaBytes:
		return nil, "", ErrTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, d.cfg.MaxMediaBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("discord attachment: %w", err)
	}
	if int64(len(data)) > d.cfg.MaxMediaBytes {
		return nil, "", ErrTooLarge
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// onCDN reports whether link is under one of Config.CDNURLs.
func (d *Discord) onCDN(link string) bool {
	u, err := url.Parse(link)
	if err != nil || u.User != nil {
		return false
	}
	for _, base := range d.cfg.CDNURLs {
		b, err := url.Parse(base)
		if err == nil && u.Scheme == b.Scheme && u.Host == b.Host && strings.HasPrefix(u.Path, b.Path) {
			return true
		}
	}
	return false
}

// files are the media of a message to send, read from the media service
// to be uploaded as its attachments, each named by its link's last path
// element.
func (d *Discord) files(ctx context.Context, links []string) ([]*discordgo.File, error) {
	var out []*discordgo.File
	for _, link := range links {
		f, err := d.file(ctx, link)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// file reads one link of the media service, at most the channel's upload
// limit. A refusal of the media service (4xx: gone, expired) is
// permanent; its failures (5xx, the network) are tried again.
func (d *Discord) file(ctx context.Context, link string) (*discordgo.File, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, &egress.SendError{Err: err, Permanent: true}
	}
	resp, err := d.web.Do(req)
	if err != nil {
		return nil, &egress.SendError{Err: fmt.Errorf("file for upload: %w", err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &egress.SendError{Err: fmt.Errorf("file for upload: %s", resp.Status), Permanent: resp.StatusCode < 500, Status: resp.StatusCode}
	}
	limit := int64(max(d.cfg.Rules.MaxFileBytes, d.cfg.Rules.MaxImageBytes))
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, &egress.SendError{Err: fmt.Errorf("file for upload: %w", err)}
	}
	if int64(len(data)) > limit {
		return nil, &egress.SendError{Err: fmt.Errorf("file for upload: larger than %d bytes", limit), Permanent: true}
	}
	name := "file"
	if u, err := url.Parse(link); err == nil && path.Base(u.Path) != "/" && path.Base(u.Path) != "." {
		name = path.Base(u.Path)
	}
	return &discordgo.File{Name: name, ContentType: resp.Header.Get("Content-Type"), Reader: bytes.NewReader(data)}, nil
}
