package contract_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
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
	if _, err := contract.Publish(ctx, s.JS, "t.a", []byte("x"), "a"); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	cctx, cancel := context.WithTimeout(ctx, 4*time.Second)
	defer cancel()
	err = contract.Consume(cctx, s.JS, cons, func(ctx context.Context, _ jetstream.Msg) error {
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
