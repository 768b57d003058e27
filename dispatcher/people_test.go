package dispatcher_test

import (
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/dispatcher"
)

// An admin makes pairing codes, lists and revokes the people paired in;
// anybody else is told no; a person just paired in is welcomed.
func TestAdminPairing(t *testing.T) {
	b := newBench(t, dispatcher.Config{Admins: []string{"web.admin"}})
	admin, other := user(t, "admin"), user(t, "alice")
	if got := b.say(other, "p1", "pair"); len(got) != 1 || !strings.HasPrefix(got[0], "Only an admin") {
		t.Errorf("pair from somebody else: %q", got)
	}
	got := b.say(admin, "p2", "pair")
	if len(got) != 1 || !strings.HasPrefix(got[0], "Pairing code: ") {
		t.Fatalf("pair: %q", got)
	}
	code := strings.TrimPrefix(strings.SplitN(got[0], "\n", 2)[0], "Pairing code: ")
	pairing, err := access.OpenPairing(t.Context(), b.js)
	if err != nil {
		t.Fatal(err)
	}
	bob, _ := contract.PhoneUser(contract.ChannelWhatsApp, "+15550001111")
	if ok, err := pairing.Redeem(t.Context(), bob, code); !ok || err != nil {
		t.Fatalf("redeem %s: %v %v", code, ok, err)
	}
	// Ingress publishes the message that paired bob in, marked.
	in := contract.Inbound{ID: "SM1", User: bob, Text: code, At: time.Now(), Paired: true}
	data, _ := contract.Encode(&in)
	ack, err := b.js.Publish(t.Context(), contract.InboundSubject(bob), data)
	if err != nil {
		t.Fatal(err)
	}
	b.inboundHandled(ack.Sequence)
	if got := b.noticesOf(bob, "SM1"); len(got) != 1 || !strings.HasPrefix(got[0], "Welcome: you are paired in") {
		t.Errorf("bob's welcome: %q", got)
	}
	if jobs := b.jobsOf(bob); len(jobs) != 0 {
		t.Errorf("the code ran as a job: %v", jobIDs(jobs))
	}
	if got := b.say(admin, "p3", "people"); len(got) != 1 || !strings.Contains(got[0], "+15550001111  since ") {
		t.Errorf("people: %q", got)
	}
	if got := b.say(admin, "p4", "revoke +15550001111"); len(got) != 1 || !strings.HasPrefix(got[0], "Revoked +15550001111") {
		t.Errorf("revoke: %q", got)
	}
	if got := b.say(admin, "p5", "revoke +15550001111"); len(got) != 1 || !strings.HasPrefix(got[0], "Nobody paired in as") {
		t.Errorf("revoke again: %q", got)
	}
}
