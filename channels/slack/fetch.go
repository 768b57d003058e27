package slack

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// fetch downloads a file a person sent from its url_private_download with
// the bot token (Authorization: Bearer), which goes only to Slack's hosts
// over https or to the configured API's host (ErrNotSlackFile otherwise).
// ErrTooLarge over cfg.MaxFetchBytes; ErrNoFile when Slack answers with
// its sign-in page.
func fetch(ctx context.Context, cfg Config, link string) ([]byte, string, error) {
	if !mayGetToken(cfg.APIURL, link) {
		return nil, "", fmt.Errorf("%w: %q", ErrNotSlackFile, link)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Authorization", "Bearer "+cfg.BotToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("slack file: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("slack file: %s", resp.Status)
	}
	ct := resp.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt == "text/html" {
		return nil, "", ErrNoFile
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, cfg.MaxFetchBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("slack file: %w", err)
	}
	if int64(len(data)) > cfg.MaxFetchBytes {
		return nil, "", ErrTooLarge
	}
	return data, ct, nil
}

// mayGetToken reports whether link may receive the bot token: https on
// slack.com or a subdomain (files.slack.com), or the API's own scheme and
// host.
func mayGetToken(apiURL, link string) bool {
	u, err := url.Parse(link)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	if u.Scheme == "https" && (host == "slack.com" || strings.HasSuffix(host, ".slack.com")) {
		return true
	}
	a, err := url.Parse(apiURL)
	return err == nil && a.Host != "" && u.Scheme == a.Scheme && strings.EqualFold(u.Host, a.Host)
}
