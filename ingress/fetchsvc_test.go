package ingress_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
)

// A fetched attachment lands in the media store of its person's channel:
// media for a built-in channel, media-<name> for a plug-in one, the one
// store that channel's login may read.
func TestServeFetchStoresInTheChannelsStore(t *testing.T) {
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{Channels: []string{"slack"}}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	fetch := func(_ context.Context, f contract.MediaFetch) ([]byte, string, error) {
		return []byte("notes of " + f.User.Channel + "\n"), "text/plain", nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- ingress.ServeFetch(ctx, ns.JS, "test", []string{contract.ChannelTelegram, "slack"}, fetch, zerolog.New(zerolog.NewTestWriter(t)))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeFetch: %v", err)
		}
	})

	for _, tt := range []struct{ channel, store, other string }{
		{contract.ChannelTelegram, "media", "media-slack"},
		{"slack", "media-slack", "media"},
	} {
		u := contract.User{Channel: tt.channel, ID: "U1"}
		data, err := contract.Encode(&contract.MediaFetch{User: u, Media: contract.Media{URL: "https://files.example.com/1", Name: "notes.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		var img contract.Image
		natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
			resp, err := ns.NC.Request(contract.MediaFetchSubject(u.Channel), data, 5*time.Second)
			if err != nil {
				return err
			}
			if code := resp.Header.Get(micro.ErrorCodeHeader); code != "" {
				return errors.New(code + " " + resp.Header.Get(micro.ErrorHeader))
			}
			return json.Unmarshal(resp.Data, &img)
		})
		own, err := ns.JS.ObjectStore(t.Context(), tt.store)
		if err != nil {
			t.Fatal(err)
		}
		got, err := own.GetBytes(t.Context(), img.ID)
		if want := "notes of " + tt.channel + "\n"; err != nil || string(got) != want {
			t.Errorf("%s's attachment in %s: got %q, %v; want %q", tt.channel, tt.store, got, err, want)
		}
		other, err := ns.JS.ObjectStore(t.Context(), tt.other)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.GetInfo(t.Context(), img.ID); !errors.Is(err, jetstream.ErrObjectNotFound) {
			t.Errorf("%s's attachment in %s: got %v; want %v", tt.channel, tt.other, err, jetstream.ErrObjectNotFound)
		}
	}
}

// A plug-in channel's fetch service does not start without its media
// store: textslash provision makes it (TEXTSLASH_CHANNELS).
func TestServeFetchNeedsTheChannelsStore(t *testing.T) {
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	// Served, it would run until ctx ends, returning nil.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := ingress.ServeFetch(ctx, ns.JS, "test", []string{"line"}, nil, zerolog.Nop())
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("ServeFetch for line without media-line: got %v; want %v", err, jetstream.ErrBucketNotFound)
	}
}
