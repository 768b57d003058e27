package access_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// A code pairs in the first stranger who sends it, once; at most three
// wait at once; a stranger's wrong tries are limited; revoking unpairs;
// the watched set follows.
func TestPairing(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if err := bus.Provision(ctx, s.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	p, err := access.OpenPairing(ctx, s.JS)
	if err != nil {
		t.Fatal(err)
	}
	people := access.NewAllowlist(nil, nil)
	if err := people.Open(ctx, s.JS); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for range contract.PairingPending {
		c, err := p.NewCode(ctx, "operator")
		if err != nil {
			t.Fatal(err)
		}
		codes = append(codes, c)
	}
	if _, err := p.NewCode(ctx, "operator"); !errors.Is(err, contract.ErrTooManyCodes) {
		t.Errorf("a fourth code: %v; want ErrTooManyCodes", err)
	}
	bob, _ := contract.PhoneUser(contract.ChannelWhatsApp, "+15550001111")
	eve, _ := contract.PhoneUser(contract.ChannelSMS, "+15550002222")
	if ok, err := p.Redeem(ctx, bob, "  "+strings.ToLower(codes[0])+"\n"); !ok || err != nil {
		t.Fatalf("bob's code: %v, %v; want paired", ok, err)
	}
	if ok, _ := p.Redeem(ctx, eve, codes[0]); ok {
		t.Error("a code paired a second person")
	}
	natstest.CheckFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		if !people.Allows(bob) {
			return errors.New("bob not in the watched set")
		}
		return nil
	})
	if smsBob, _ := contract.PhoneUser(contract.ChannelSMS, "+15550001111"); !people.Allows(smsBob) || people.Allows(eve) {
		t.Error("a paired number is one person on WhatsApp and SMS, and nobody else is in")
	}
	// Eve guesses: after PairingTries wrong codes even a right one is not looked up.
	for i := range contract.PairingTries {
		if ok, err := p.Redeem(ctx, eve, fmt.Sprintf("ZZZZZ%d", i+2)); ok || err != nil {
			t.Fatalf("wrong try %d: %v, %v", i, ok, err)
		}
	}
	if ok, _ := p.Redeem(ctx, eve, codes[1]); ok {
		t.Error("a stranger past the wrong tries limit was paired")
	}
	for _, text := range []string{"hello", "12345", "ABCDEFG", "ABC DE"} {
		if ok, _ := p.Redeem(ctx, bob, text); ok {
			t.Errorf("%q paired someone", text)
		}
	}
	list, err := p.List(ctx)
	if err != nil || len(list) != 1 || list[0].User != bob || list[0].By != "operator" {
		t.Errorf("people %+v, %v; want bob, by operator", list, err)
	}
	if err := p.Revoke(ctx, contract.PersonKey(bob)); err != nil {
		t.Fatal(err)
	}
	if err := p.Revoke(ctx, contract.PersonKey(bob)); !errors.Is(err, contract.ErrNotPaired) {
		t.Errorf("revoking twice: %v; want ErrNotPaired", err)
	}
	natstest.CheckFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		if people.Allows(bob) {
			return errors.New("bob still in the watched set after revoke")
		}
		return nil
	})
}

// A code not used within the pairing bucket's TTL is gone.
func TestPairingCodeExpires(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	people, _ := bus.KeyValueConfig(bus.Options{}, contract.BucketPeople)
	short, _ := bus.KeyValueConfig(bus.Options{}, contract.BucketPairing)
	short.TTL = time.Second // an hour in production
	for _, cfg := range []jetstream.KeyValueConfig{people, short} {
		if _, err := s.JS.CreateKeyValue(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	p, err := access.OpenPairing(ctx, s.JS)
	if err != nil {
		t.Fatal(err)
	}
	code, err := p.NewCode(ctx, "operator")
	if err != nil {
		t.Fatal(err)
	}
	bob, _ := contract.PhoneUser(contract.ChannelWhatsApp, "+15550001111")
	natstest.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		kv, err := s.JS.KeyValue(ctx, contract.BucketPairing)
		if err != nil {
			return err
		}
		if _, err := kv.Get(ctx, "code."+code); err == nil {
			return errors.New("the code is still there")
		}
		return nil
	})
	if ok, err := p.Redeem(ctx, bob, code); ok || err != nil {
		t.Errorf("an expired code: %v, %v; want nobody paired", ok, err)
	}
}

// A key of the people bucket is what PersonKey makes, and nothing else: a
// key written by hand any other way would match nobody.
func TestIsPersonKey(t *testing.T) {
	for key, want := range map[string]bool{
		"phone.15551234567": true, "telegram.123456789": true, "telegram.-100123": true, "web.abc123": true,
		// A plug-in channel's people (kit/): <channel>.<its id>.
		"slack.U0ALICE1": true, "discord.80351110224678912": true,
		"whatsapp.15551234567": false, "sms.15551234567": false, "phone.1": false, "slack.U0A.B": false,
		"phone.+15551234567": false, "telegram.": false, "": false, "+15551234567": false, "slack": false,
	} {
		if got := contract.IsPersonKey(key); got != want {
			t.Errorf("IsPersonKey(%q) = %v; want %v", key, got, want)
		}
	}
	u, _ := contract.PhoneUser(contract.ChannelWhatsApp, "+15551234567")
	if !contract.IsPersonKey(contract.PersonKey(u)) {
		t.Errorf("PersonKey's own %q refused", contract.PersonKey(u))
	}
}

// An address as people write it (ADMINS, revoke) is a number, or
// <channel>:<id> on any channel but WhatsApp and SMS (whose people are
// numbers): Telegram's and plug-in channels' alike.
func TestAddressKey(t *testing.T) {
	for addr, want := range map[string]string{
		"+15551234567": "phone.15551234567", "telegram:123456789": "telegram.123456789",
		"slack:U0ALICE1": "slack.U0ALICE1", "discord:80351110224678912": "discord.80351110224678912",
		"whatsapp:+15551234567": "phone.15551234567", "sms:15551234567": "", "phone:15551234567": "", "slack:": "", "slack:U0A.B": "", "U0ALICE1": "", "": "",
	} {
		got, err := contract.AddressKey(addr)
		if got != want || (want == "") != errors.Is(err, contract.ErrInvalidUser) {
			t.Errorf("AddressKey(%q) = %q, %v; want %q", addr, got, err, want)
		}
		if want != "" && !contract.IsPersonKey(got) {
			t.Errorf("AddressKey(%q) = %q, which IsPersonKey refuses", addr, got)
		}
	}
}
