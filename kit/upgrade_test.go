package kit_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// A channel upgraded from a textslash whose kit made its durable with one
// filter per kind (filter_subjects) takes it over: the kit makes it the
// one filter ts.ev.<name>.> its login may create, and delivers; the kinds
// it does not act on (a state event) are acknowledged, not left pending.
func TestRunTakesOverAnOldDurable(t *testing.T) {
	s := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), s.JS, bus.Options{Channels: []string{"chat"}}); err != nil {
		t.Fatal(err)
	}
	var old []string
	for _, k := range bus.EgressKinds {
		old = append(old, "ts.ev.chat.*."+string(k))
	}
	if _, err := s.JS.CreateConsumer(t.Context(), contract.StreamEvents, jetstream.ConsumerConfig{
		Durable: "egress-chat", FilterSubjects: old, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	snd := &sender{}
	k := open(t, s, testChannel{name: "chat", Sender: snd, allowed: []string{"alice"}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	alice := contract.User{Channel: "chat", ID: "alice"}
	for i, ev := range []contract.Event{
		{Kind: contract.KindState, From: "idle", To: "working"},
		{Kind: contract.KindNotice, Text: "hello"},
	} {
		ev.User, ev.JobID = alice, "m1"
		if err := bus.PublishEvent(t.Context(), s.JS, ev, contract.MsgID(alice, "m1", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if got := snd.bodies(); !slices.Equal(got, []string{"hello"}) {
			return fmt.Errorf("sent %q; want hello", got)
		}
		return nil
	})
	cons, err := s.JS.Consumer(t.Context(), contract.StreamEvents, "egress-chat")
	if err != nil {
		t.Fatal(err)
	}
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		info, err := cons.Info(t.Context())
		if err != nil {
			return err
		}
		if info.Config.FilterSubject != "ts.ev.chat.>" || len(info.Config.FilterSubjects) != 0 {
			return fmt.Errorf("filter %q %q; want ts.ev.chat.> alone", info.Config.FilterSubject, info.Config.FilterSubjects)
		}
		if info.NumAckPending != 0 || info.NumPending != 0 {
			return fmt.Errorf("%d in hand, %d pending; want every event settled", info.NumAckPending, info.NumPending)
		}
		return nil
	})
}
