package discord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/bwmarrin/discordgo"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/kit"
)

// Fetch downloads an attachment a person sent (a contract.Media URL this
// channel published), for the kit (Channel.Fetch): only from Discord's
// CDN (Config.CDNURLs; any other URL is kit.ErrNotMine), at most
// Config.MaxMediaBytes (kit.ErrTooLarge). Its bytes and content type;
// ErrGone when the CDN no longer has it (signed URLs expire in a day).
func (d *Discord) Fetch(ctx context.Context, link string) ([]byte, string, error) {
	if !d.onCDN(link) {
		return nil, "", fmt.Errorf("%w: %.80q", kit.ErrNotMine, link)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", kit.ErrNotMine, err)
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
		return nil, "", kit.ErrTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, d.cfg.MaxMediaBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("discord attachment: %w", err)
	}
	if int64(len(data)) > d.cfg.MaxMediaBytes {
		return nil, "", kit.ErrTooLarge
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

// files are the media of a message to send (the kit's stored:<id>
// links), read from the media store with Kit.Media to be uploaded as its
// attachments.
func (d *Discord) files(ctx context.Context, refs []string) ([]*discordgo.File, error) {
	var out []*discordgo.File
	for _, ref := range refs {
		f, err := d.file(ctx, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// file reads one image or file from the media store, at most the
// channel's upload limit. A link that is not the store's, an object gone
// (past contract.MediaTTL) or one too large is refused for good; the
// store's failures are tried again.
func (d *Discord) file(ctx context.Context, ref string) (*discordgo.File, error) {
	a, err := d.k.Media(ctx, ref)
	switch {
	case errors.Is(err, kit.ErrNotStored) || errors.Is(err, jetstream.ErrObjectNotFound):
		return nil, &egress.SendError{Err: fmt.Errorf("file for upload: %w", err), Permanent: true}
	case err != nil:
		return nil, &egress.SendError{Err: fmt.Errorf("file for upload: %w", err)}
	}
	limit := d.cfg.Rules.MaxFileBytes
	if contract.IsImage(a.ContentType) {
		limit = d.cfg.Rules.MaxImageBytes
	}
	if len(a.Data) > limit {
		return nil, &egress.SendError{Err: fmt.Errorf("file for upload: %s is %d bytes, over Discord's %d", a.Name, len(a.Data), limit), Permanent: true}
	}
	return &discordgo.File{Name: a.Name, ContentType: a.ContentType, Reader: bytes.NewReader(a.Data)}, nil
}
