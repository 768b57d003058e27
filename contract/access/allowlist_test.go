package access_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// The allowlist lets in the numbers (on WhatsApp and SMS alike) and chats
// configured, and, once open, the people paired in; AllowsNow sees them
// before the watch does.
func TestAllowlist(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if err := bus.Provision(ctx, s.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	a := access.NewAllowlist([]string{"+15551234567", "whatsapp:+15557654321", "nonsense"}, map[string][]string{contract.ChannelTelegram: {"4242", "-1001234567890"}})
	user := func(ch, id string) contract.User { return contract.User{Channel: ch, ID: id} }
	bob := user(contract.ChannelTelegram, "777")
	for _, tt := range []struct {
		u    contract.User
		want bool
	}{
		{user(contract.ChannelWhatsApp, "15551234567"), true},
		{user(contract.ChannelSMS, "15551234567"), true},
		{user(contract.ChannelSMS, "15557654321"), true},
		{user(contract.ChannelTelegram, "4242"), true},
		{user(contract.ChannelTelegram, "-1001234567890"), true},
		{user(contract.ChannelTelegram, "15551234567"), false}, // a number is no chat
		{user(contract.ChannelWhatsApp, "4242"), false},
		{bob, false},
	} {
		if got := a.Allows(tt.u); got != tt.want {
			t.Errorf("Allows(%s) = %v; want %v", tt.u, got, tt.want)
		}
	}
	if ok, err := a.Redeem(ctx, bob, "ABCDEF"); ok || err != nil {
		t.Errorf("a code before Open: %v, %v; want nobody paired", ok, err)
	}
	if err := a.Open(ctx, s.JS); err != nil {
		t.Fatal(err)
	}
	p, err := access.OpenPairing(ctx, s.JS)
	if err != nil {
		t.Fatal(err)
	}
	servePairing(t, s, p)
	code, err := p.NewCode(ctx, "operator")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Redeem(ctx, bob, code); !ok || err != nil {
		t.Fatalf("bob's code: %v, %v; want paired", ok, err)
	}
	if ok, err := a.AllowsNow(ctx, bob); !ok || err != nil {
		t.Errorf("AllowsNow(bob) just paired: %v, %v; want true", ok, err)
	}
	natstest.CheckFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		if !a.Allows(bob) {
			return errors.New("bob not allowed once the watch saw him")
		}
		return nil
	})
	if ok, _ := a.AllowsNow(ctx, user(contract.ChannelTelegram, "888")); ok {
		t.Error("a stranger allowed")
	}
}

// A plug-in channel's allowlist lets in its own ids on its own channel
// only; an id that is no subject token lists nobody.
func TestChannelAllowlist(t *testing.T) {
	a := access.NewChannelAllowlist("slack", []string{"U024BE7LH", "not a token"})
	for _, tt := range []struct {
		u    contract.User
		want bool
	}{
		{contract.User{Channel: "slack", ID: "U024BE7LH"}, true},
		{contract.User{Channel: "discord", ID: "U024BE7LH"}, false},
		{contract.User{Channel: "slack", ID: "U999"}, false},
		{contract.User{Channel: "slack", ID: "not a token"}, false},
	} {
		if got := a.Allows(tt.u); got != tt.want {
			t.Errorf("Allows(%s) = %v; want %v", tt.u, got, tt.want)
		}
	}
}

// The id "*" lets in everyone of its channel, and of no other.
func TestAllowlistAnyone(t *testing.T) {
	a := access.NewAllowlist(nil, map[string][]string{contract.ChannelWeb: {"*"}, "slack": {"U1"}})
	c := access.NewChannelAllowlist("line", []string{"*"})
	for _, tt := range []struct {
		a    *access.Allowlist
		u    contract.User
		want bool
	}{
		{a, contract.User{Channel: contract.ChannelWeb, ID: "0a1b2c"}, true},
		{a, contract.User{Channel: "slack", ID: "U2"}, false},
		{a, contract.User{Channel: contract.ChannelTelegram, ID: "4242"}, false},
		{c, contract.User{Channel: "line", ID: "Uabc"}, true},
		{c, contract.User{Channel: "slack", ID: "Uabc"}, false},
	} {
		if got := tt.a.Allows(tt.u); got != tt.want {
			t.Errorf("Allows(%s) = %v; want %v", tt.u, got, tt.want)
		}
	}
}

// servePairing serves the pairing service with p until the test ends,
// and returns once it answers.
func servePairing(t *testing.T, s *natstest.Server, p *access.Pairing) {
	t.Helper()
	go access.ServePairing(t.Context(), s.NC, p, zerolog.Nop())
	natstest.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		_, err := s.NC.Request("$SRV.PING.pairing", nil, time.Second)
		return err
	})
}

// The pairing service pairs in only a person of the channel whose
// subject the request came on: a channel asking for somebody of another
// channel is refused, and the code stays pending for its own person.
func TestPairingTakesTheSubjectsChannel(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if err := bus.Provision(ctx, s.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	p, err := access.OpenPairing(ctx, s.JS)
	if err != nil {
		t.Fatal(err)
	}
	servePairing(t, s, p)
	code, err := p.NewCode(ctx, "operator")
	if err != nil {
		t.Fatal(err)
	}
	victim := contract.User{Channel: contract.ChannelWhatsApp, ID: "15550001111"}
	data, err := contract.Encode(&contract.PairRequest{User: victim, Code: code})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.NC.Request(contract.PairSubject("slack"), data, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get("Nats-Service-Error-Code"); got != "400" {
		t.Errorf("a WhatsApp person paired on Slack's subject: error code %q; want 400", got)
	}
	everyone := access.NewAllowlist(nil, nil)
	if err := everyone.Open(ctx, s.JS); err != nil {
		t.Fatal(err)
	}
	if ok, _ := everyone.AllowsNow(ctx, victim); ok {
		t.Error("the WhatsApp person was paired in")
	}
	own := contract.User{Channel: "slack", ID: "U1"}
	if ok, err := access.RequestPair(ctx, s.NC, own, strings.ToLower(code)); !ok || err != nil {
		t.Errorf("Slack's own person with the code: %v, %v; want paired", ok, err)
	}
	if ok, err := access.RequestPair(ctx, s.NC, own, "hello there"); ok || err != nil {
		t.Errorf("a message that is no code: %v, %v; want false, nil", ok, err)
	}
}
