package channel

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Download GETs an attachment at url for a Fetcher, with auth (nil: none)
// adding the provider's credentials to the request: its body, at most
// MaxFetchBytes (ErrTooLarge beyond); an error for any answer but 200.
func Download(ctx context.Context, url string, auth func(*http.Request)) ([]byte, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if auth != nil {
		// A provider may redirect to its CDN (Twilio does); net/http drops
		// the credentials when the redirect leaves the host.
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
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxFetchBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFetchBytes {
		return nil, ErrTooLarge
	}
	return data, nil
}
