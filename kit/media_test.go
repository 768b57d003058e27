package kit_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/kit"
	"github.com/textslash/textslash/natstest"
)

// Kit.Media reads a reply's images and files from the channel's own media
// store, media-<name>, where the runner puts them for its people; an
// object of the shared media store (the built-in channels') is not the
// channel's to read.
func TestMediaReadsTheChannelsOwnStore(t *testing.T) {
	s := natstest.RunJetStream(t)
	k := open(t, s, kit.Channel{Name: "line", Sender: &sender{}, Allowed: []string{"alice"}})
	ctx := t.Context()
	put := func(bucket, name string, data []byte) contract.Image {
		t.Helper()
		store, err := s.JS.ObjectStore(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		f, err := bus.PutFile(ctx, store, "text/csv", name, data)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	own := put("media-line", "out.csv", []byte("a,b\n"))
	a, err := k.Media(ctx, kit.MediaRef(own))
	if err != nil || !bytes.Equal(a.Data, []byte("a,b\n")) || a.ContentType != "text/csv" || a.Name != "out.csv" {
		t.Errorf("Media(%s): %s %q %q, %v; want out.csv from media-line", kit.MediaRef(own), a.ContentType, a.Name, a.Data, err)
	}
	shared := put(contract.BucketMedia, "theirs.csv", []byte("c,d\n"))
	if _, err := k.Media(ctx, kit.MediaRef(shared)); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Errorf("Media of an object in media: got %v; want %v", err, jetstream.ErrObjectNotFound)
	}
}
