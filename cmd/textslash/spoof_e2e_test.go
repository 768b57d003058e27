package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// A plug-in channel's own login, against textslash serve, acting as a
// person of every other channel (an admin among them) on its own
// subjects: nothing runs in anybody's workspace and nobody is answered;
// its own person's message, published the same way, runs.
func TestChannelLoginCannotActAsAnotherPerson(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_CHANNELS=evil", "TEXTSLASH_ADMINS=web:boss")
	login := natsLogin(t, inst.Data, "channel-evil")
	nc, err := nats.Connect(login["NATS_URL"], nats.UserInfo(login["NATS_USER"], login["NATS_PASSWORD"]), nats.CustomInboxPrefix(login["NATS_INBOX_PREFIX"]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	own := contract.User{Channel: "evil", ID: "mallory"}
	victims := []contract.User{
		{Channel: contract.ChannelWeb, ID: "boss"},
		{Channel: contract.ChannelWhatsApp, ID: "15550001111"},
		{Channel: contract.ChannelTelegram, ID: "42"},
		{Channel: "slack", ID: "U1"},
	}
	publish := func(u contract.User, id, text string) {
		t.Helper()
		data, err := contract.Encode(&contract.Inbound{ID: id, User: u, Text: text, At: time.Now().UTC()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, contract.InboundSubject(own), data, jetstream.WithMsgID(id)); err != nil {
			t.Fatalf("publish as %s: %v", u.Key(), err)
		}
	}
	for i, v := range victims {
		publish(v, fmt.Sprintf("spoof%d", i), "echo pwned > pwned.txt; pwd")
		publish(v, fmt.Sprintf("pair%d", i), "pair")
	}
	publish(own, "real", "echo mine > mine.txt; echo done mine")

	admin := natsLogin(t, inst.Data, "admin")
	anc, err := nats.Connect(admin["NATS_URL"], nats.UserInfo(admin["NATS_USER"], admin["NATS_PASSWORD"]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(anc.Close)
	ajs, _ := jetstream.New(anc)
	events, err := ajs.Stream(ctx, contract.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	// The real message ran: every message before it was routed (or
	// refused) by then.
	natstest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		m, err := events.GetLastMsgForSubject(ctx, contract.EventSubject(own, contract.KindDone))
		if err != nil {
			return err
		}
		if !strings.Contains(string(m.Data), "done mine") {
			return fmt.Errorf("done: %s", m.Data)
		}
		return nil
	})
	in, err := ajs.Consumer(ctx, contract.StreamIn, contract.ConsumerDispatcher)
	if err != nil {
		t.Fatal(err)
	}
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		info, err := in.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending > 0 || info.NumPending > 0 {
			return fmt.Errorf("IN: %d pending, %d in hand", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	for _, v := range victims {
		if m, err := events.GetLastMsgForSubject(ctx, contract.UserEvents(v)); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Errorf("%s has events (%v): %s", v.Key(), err, m.Data)
		}
	}
	if ran, _ := filepath.Glob(filepath.Join(inst.Data, "workspaces", "*", "pwned.txt")); len(ran) > 0 {
		t.Errorf("a spoofed message ran: %q", ran)
	}
	log, _ := os.ReadFile(inst.Log)
	if !strings.Contains(string(log), "inbound refused: its payload names another person than its subject") {
		t.Errorf("the log does not say a spoofed message was refused:\n%s", tail(string(log), 3000))
	}
}
