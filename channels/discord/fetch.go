package discord

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/textslash/textslash/channel"

	"github.com/bwmarrin/discordgo"

	"github.com/textslash/textslash/contract"
)

// Fetch downloads an attachment a person sent (a contract.Media URL this
// channel published), for the kit (Channel.Fetch): only from Discord's
// CDN (Config.CDNURLs; any other URL is channel.ErrNotMine), at most
// Config.MaxMediaBytes (channel.ErrTooLarge). Its bytes and content type;
// ErrGone when the CDN no longer has it (signed URLs expire in a day).
func (d *Discord) Fetch(ctx context.Context, link string) ([]byte, string, error) {
	if !d.onCDN(link) {
		return nil, "", fmt.Errorf("%w: %.80q", channel.ErrNotMine, link)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", channel.ErrNotMine, err)
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
		return nil, "", channel.ErrTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, d.cfg.MaxMediaBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("discord attachment: %w", err)
	}
	if int64(len(data)) > d.cfg.MaxMediaBytes {
		return nil, "", channel.ErrTooLarge
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

// files are a reply's images and files (read by the kit) as Discord
// attachments, each at most the channel's upload limit: one too large is
// refused for good.
func (d *Discord) files(as []channel.Attachment) ([]*discordgo.File, error) {
	var out []*discordgo.File
	for _, a := range as {
		limit := d.cfg.Rules.MaxFileBytes
		if contract.IsImage(a.ContentType) {
			limit = d.cfg.Rules.MaxImageBytes
		}
		if len(a.Data) > limit {
			return nil, &channel.SendError{Err: fmt.Errorf("file for upload: %s is %d bytes, over Discord's %d", a.Name, len(a.Data), limit), Permanent: true}
		}
		out = append(out, &discordgo.File{Name: a.Name, ContentType: a.ContentType, Reader: bytes.NewReader(a.Data)})
	}
	return out, nil
}
