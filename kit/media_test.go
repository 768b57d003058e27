package kit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
	k := open(t, s, testChannel{name: "line", Sender: &sender{}, allowed: []string{"alice"}})
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

// A reply's files reach the channel's Send as bytes, read by the kit from
// the channel's media store; a reply whose file expired is refused for
// good (a dead letter), not tried again.
func TestRunAttaches(t *testing.T) {
	s := natstest.RunJetStream(t)
	snd := &sender{}
	k := open(t, s, testChannel{name: "line", Sender: snd, allowed: []string{"alice"}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	store, err := s.JS.ObjectStore(t.Context(), contract.MediaBucketOf("line"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := bus.PutFile(t.Context(), store, "text/csv", "out.csv", []byte("a,b\n"))
	if err != nil {
		t.Fatal(err)
	}
	gone := contract.Image{ID: "expired", ContentType: "text/csv", Name: "old.csv"}
	alice := contract.User{Channel: "line", ID: "alice"}
	for i, ev := range []contract.Event{
		{Kind: contract.KindDone, Text: "the table", Images: []contract.Image{f}},
		{Kind: contract.KindDone, Text: "the old table", Images: []contract.Image{gone}},
	} {
		ev.User, ev.JobID = alice, fmt.Sprint("m", i)
		if err := bus.PublishEvent(t.Context(), s.JS, ev, contract.MsgID(alice, ev.JobID, string(ev.Kind))); err != nil {
			t.Fatal(err)
		}
	}
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		events, err := s.JS.Stream(t.Context(), contract.StreamEvents)
		if err != nil {
			return err
		}
		_, err = events.GetLastMsgForSubject(t.Context(), contract.EventSubject(alice, contract.KindUndelivered))
		return err
	})
	snd.mu.Lock()
	defer snd.mu.Unlock()
	if len(snd.sent) != 1 || len(snd.sent[0].Attachments) != 1 {
		t.Fatalf("sent %+v; want the table alone, with its file", snd.sent)
	}
	if a := snd.sent[0].Attachments[0]; a.Name != "out.csv" || a.ContentType != "text/csv" || !bytes.Equal(a.Data, []byte("a,b\n")) {
		t.Errorf("attachment %q %q %q; want out.csv's bytes", a.Name, a.ContentType, a.Data)
	}
	if n := snd.tries["the old table"]; n != 0 {
		t.Errorf("the reply whose file expired reached Send %d times; want none", n)
	}
}
