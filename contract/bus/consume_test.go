package bus_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// A handler that takes longer than the consumer's ack wait (a provider's
// rate limit held it) keeps its message: Consume tells JetStream it is in
// progress, so it is not delivered again meanwhile.
func TestConsumeKeepsSlowHandlersMessage(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	stream, err := s.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "slow", AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: time.Second, MaxAckPending: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Publish(ctx, s.JS, "t.a", []byte("x"), "a"); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	cctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	err = bus.Consume(cctx, s.JS, cons, func(ctx context.Context, _ jetstream.Msg) error {
		calls.Add(1)
		time.Sleep(2500 * time.Millisecond) // two and a half ack waits
		return nil
	}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("handler called %d times; want once", n)
	}
}

// One person's slow message does not hold up other people's: Consume
// handles users in parallel, and each user's messages one at a time in
// stream order.
func TestConsumeUsersInParallelEachInOrder(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	stream, err := s.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "IN", Subjects: []string{"ts.in.>"}})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "d", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	for i, subject := range []string{"ts.in.web.a", "ts.in.web.a", "ts.in.web.b", "ts.in.web.a"} {
		if _, err := bus.Publish(ctx, s.JS, subject, []byte{byte('0' + i)}, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	bDone := make(chan struct{})
	var mu sync.Mutex
	var order []string
	var inA atomic.Int32 // a's handlers running at once
	handled := make(chan struct{}, 4)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = bus.Consume(cctx, s.JS, cons, func(ctx context.Context, m jetstream.Msg) error {
			defer func() { handled <- struct{}{} }()
			record := func() {
				mu.Lock()
				order = append(order, m.Subject()[len("ts.in.web."):]+string(m.Data()))
				mu.Unlock()
			}
			if m.Subject() == "ts.in.web.b" {
				record()
				close(bDone)
				return nil
			}
			if inA.Add(1) > 1 {
				t.Errorf("two of a's messages handled at once")
			}
			defer inA.Add(-1)
			if string(m.Data()) == "0" {
				select {
				case <-bDone: // b went ahead while a's first message was slow
				case <-time.After(5 * time.Second):
					t.Errorf("b's message waited behind a's slow one")
				}
			}
			record()
			return nil
		}, zerolog.New(io.Discard))
	}()
	for range 4 {
		select {
		case <-handled:
		case <-time.After(10 * time.Second):
			t.Fatal("not every message handled in 10 s")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var a []string
	for _, o := range order {
		if o[0] == 'a' {
			a = append(a, o)
		}
	}
	if want := []string{"a0", "a1", "a3"}; !slices.Equal(a, want) {
		t.Errorf("a's messages handled in the order %v; want %v", a, want)
	}
	if order[0] != "b2" {
		t.Errorf("handled in the order %v; want b's first", order)
	}
}
