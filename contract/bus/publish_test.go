package bus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// Publish asks again when an attempt goes unanswered, as when a cluster
// loses a stream's leader after it stored the message and before it
// answered (here: a stream that does not answer at first). The stored copy
// of its own unanswered attempt is not reported as a duplicate; a message
// another publish stored under the id first is.
func TestPublishAsksAgain(t *testing.T) {
	for _, tt := range []struct {
		name       string
		before     string // stored under the id before Publish, if anything
		wantDup    bool
		wantStored string
	}{
		{name: "its own unanswered attempt", wantDup: false, wantStored: "payload"},
		{name: "another publish first", before: "someone else", wantDup: true, wantStored: "someone else"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := natstest.RunJetStream(t)
			ctx := t.Context()
			cfg := jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}
			stream, err := s.JS.CreateStream(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tt.before != "" {
				if _, err := s.JS.Publish(ctx, "t.x", []byte(tt.before), jetstream.WithMsgID("id-1")); err != nil {
					t.Fatal(err)
				}
			}
			// The stream stores but does not answer until the message is in.
			cfg.NoAck = true
			if _, err := s.JS.UpdateStream(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			answering := make(chan error, 1)
			go func() {
				natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
					if m, err := stream.GetLastMsgForSubject(ctx, "t.x"); err != nil || (tt.before == "" && string(m.Data) != "payload") {
						return fmt.Errorf("not stored yet (%v)", err)
					}
					return nil
				})
				cfg.NoAck = false
				_, err := s.JS.UpdateStream(ctx, cfg)
				answering <- err
			}()
			ack, err := bus.Publish(ctx, s.JS, "t.x", []byte("payload"), "id-1")
			if err != nil {
				t.Fatalf("Publish: %v", err)
			}
			if err := <-answering; err != nil {
				t.Fatal(err)
			}
			if ack.Duplicate != tt.wantDup {
				t.Errorf("Duplicate = %t; want %t", ack.Duplicate, tt.wantDup)
			}
			info, err := stream.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := info.State.Msgs; n != 1 {
				t.Errorf("stream holds %d messages; want 1", n)
			}
			m, err := stream.GetMsg(ctx, ack.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Data) != tt.wantStored {
				t.Errorf("stored %q; want %q", m.Data, tt.wantStored)
			}
		})
	}
}

// A refusal is final: a full subject is not asked again.
func TestPublishRefusalIsFinal(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if _, err := s.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"},
		MaxMsgsPerSubject: 1, Discard: jetstream.DiscardNew, DiscardNewPerSubject: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Publish(ctx, s.JS, "t.x", []byte("a"), "a"); err != nil {
		t.Fatal(err)
	}
	// Asked again, it would be refused until ctx's end.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := bus.Publish(ctx, s.JS, "t.x", []byte("b"), "b")
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("second message on a full subject: %v; want JetStream's refusal", err)
	}
}

// On a closed connection Publish gives up at once rather than asking again
// until ctx's end.
func TestPublishClosedConnection(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := s.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	s.NC.Close()
	if _, err := bus.Publish(ctx, s.JS, "t.x", []byte("a"), "a"); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("Publish on a closed connection: %v; want %v", err, nats.ErrConnectionClosed)
	}
}
