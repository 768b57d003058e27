// Command linechat is a textslash channel on the channel port, run with the
// kit: people's messages come in as HTTP posts of a JSON line, signed by the
// provider (LINECHAT_PROVIDER), and textslash's go out as posts to it; it
// finds a message again (nothing sent twice) and serves people's files.
package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/kit"
)

// line is one message each way: in, what a person sent; out, what is sent.
type line struct {
	ID      string   `json:"id,omitempty"`
	User    string   `json:"user"`
	Text    string   `json:"text"`
	Media   []string `json:"media,omitempty"`   // in: attachments' URLs at the provider
	Files   [][]byte `json:"files,omitempty"`   // out: images and files (base64)
	Types   []string `json:"types,omitempty"`   // out: each file's content type
	Choices []string `json:"choices,omitempty"` // out: buttons; a press is the person's next message
}

// provider is the channel (a Finder and Fetcher), sharing a secret with it.
type provider struct{ base, listen, secret string }

func (*provider) Name() string         { return "linechat" }
func (*provider) Allowed() []string    { return strings.Split(os.Getenv("LINECHAT_ALLOWED"), ",") }
func (*provider) Rules() channel.Rules { return rules }

var rules = channel.Rules{BodyLimit: 500, ProgressEvery: time.Second}

func (p *provider) Send(ctx context.Context, u contract.User, m channel.Message) (string, error) {
	out := line{User: u.ID, Text: m.Body, Choices: m.Choices}
	for _, a := range m.Attachments {
		out.Files, out.Types = append(out.Files, a.Data), append(out.Types, a.ContentType)
	}
	body, _ := json.Marshal(out)
	var sent struct{ ID string }
	if err := p.call(ctx, http.MethodPost, "/send", body, &sent); err != nil {
		return "", err
	}
	return sent.ID, nil
}

// Find makes the provider a channel.Finder: a message like m to u since then.
func (p *provider) Find(ctx context.Context, u contract.User, m channel.Message, since time.Time) (string, error) {
	q := url.Values{"user": {u.ID}, "text": {m.Body}, "since": {since.UTC().Format(time.RFC3339Nano)}}
	var found struct{ ID string }
	err := p.call(ctx, http.MethodGet, "/find?"+q.Encode(), nil, &found)
	return found.ID, err
}

// call asks the provider; its refusals are SendErrors (429: retry after).
func (p *provider) call(ctx context.Context, method, path string, body []byte, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return &channel.SendError{Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		wait, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return &channel.SendError{Err: errors.New(resp.Status), Status: resp.StatusCode,
			Permanent: resp.StatusCode < 500 && resp.StatusCode != 429, RetryAfter: time.Duration(wait) * time.Second}
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Fetch downloads an attachment a person sent: only the provider's own.
func (p *provider) Fetch(ctx context.Context, u string) ([]byte, string, error) {
	if !strings.HasPrefix(u, p.base+"/files/") {
		return nil, "", channel.ErrNotMine
	}
	var data []byte
	err := p.call(ctx, http.MethodGet, strings.TrimPrefix(u, p.base), nil, &data)
	return data, "", err
}

func main() {
	log := zerolog.New(os.Stderr).With().Timestamp().Logger()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	user, p := os.Getenv("NATS_USER"), &provider{os.Getenv("LINECHAT_PROVIDER"), os.Getenv("LINECHAT_LISTEN"), os.Getenv("LINECHAT_SECRET")}
	nc, err := nats.Connect(os.Getenv("NATS_URL"), nats.UserInfo(user, os.Getenv("NATS_PASSWORD")), nats.CustomInboxPrefix("_INBOX_"+user))
	if err != nil || p.secret == "" {
		log.Fatal().Err(err).Msg("linechat: NATS, or no LINECHAT_SECRET")
	}
	k, err := kit.Open(ctx, nc, p, log)
	if err == nil {
		err = k.Run(ctx)
	}
	if nc.Drain(); err != nil {
		log.Fatal().Err(err).Msg("linechat")
	}
}

// Run takes people's messages over HTTP and publishes them with h.
func (p *provider) Run(ctx context.Context, h channel.Host) error {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /message", func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+p.secret)) != 1 {
			http.Error(w, "not signed by the provider", http.StatusUnauthorized) // anyone else could write as anyone
			return
		}
		var in line
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		msg := contract.Inbound{ID: in.ID, User: contract.User{Channel: p.Name(), ID: in.User}, Text: in.Text}
		for _, m := range in.Media {
			msg.Media = append(msg.Media, contract.Media{URL: m})
		}
		switch err := h.Publish(r.Context(), msg); {
		case errors.Is(err, channel.ErrNotAllowed):
			http.Error(w, "not allowed", http.StatusForbidden)
		case errors.Is(err, contract.ErrInvalidPayload), errors.Is(err, contract.ErrInvalidUser):
			http.Error(w, err.Error(), http.StatusBadRequest) // no id, a bad user: retrying cannot help
		case err != nil:
			http.Error(w, err.Error(), http.StatusServiceUnavailable) // the provider retries
		}
	})
	srv := &http.Server{Addr: p.listen, Handler: mux}
	context.AfterFunc(ctx, func() { _ = srv.Shutdown(context.Background()) })
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		return err
	}
	return nil
}
