package main

import (
	"os/exec"
	"strings"
	"testing"
)

// A stranger gets silence until they send a code textslash pair made;
// then they are welcomed and answered, until an admin revokes them.
func TestPairingOverWhatsApp(t *testing.T) {
	s := startTwilioServe(t, "TEXTSLASH_ADMINS="+phoneAlice)
	const stranger = "whatsapp:+15559990001"
	to := func(addr string) []string {
		var out []string
		for _, m := range s.api.Messages() {
			if m.To == addr {
				out = append(out, m.Body)
			}
		}
		return out
	}
	s.webhook(t, stranger, "echo hi", nil)
	out, err := exec.Command(binary, "pair", "--data", s.Data).Output()
	if err != nil {
		t.Fatalf("textslash pair: %v\n%s", err, out)
	}
	code := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	if len(code) != 6 {
		t.Fatalf("textslash pair printed %q; want a code first", out)
	}
	s.webhook(t, stranger, "ZZZZZZ", nil) // a wrong code: silence
	s.webhook(t, stranger, strings.ToLower(code), nil)
	waitBody(t, s.api, "Welcome: you are paired in")
	s.webhook(t, stranger, "echo first-reply", nil)
	waitBody(t, s.api, "first-reply")
	if got := to(stranger); len(got) != 2 || !strings.HasPrefix(got[0], "Welcome") || got[1] != "first-reply" {
		t.Errorf("the stranger got %q; want only the welcome and the reply (silence before)", got)
	}
	s.webhook(t, "whatsapp:"+phoneAlice, "people", nil)
	waitBody(t, s.api, "Paired in:\n+15559990001  since ")
	s.webhook(t, "whatsapp:"+phoneAlice, "revoke +15559990001", nil)
	waitBody(t, s.api, "Revoked +15559990001")
	s.webhook(t, stranger, "echo revoked", nil)
	s.webhook(t, "whatsapp:"+phoneAlice, "echo after-revoke", nil)
	waitBody(t, s.api, "after-revoke")
	if got := to(stranger); len(got) != 2 {
		t.Errorf("after revoke the person got %q; want nothing more", got[2:])
	}
	// The code is used up.
	s.webhook(t, "whatsapp:+15559990002", code, nil)
	s.webhook(t, "whatsapp:"+phoneAlice, "echo last-one", nil)
	waitBody(t, s.api, "last-one")
	if got := to("whatsapp:+15559990002"); len(got) != 0 {
		t.Errorf("a used code paired someone else: %q", got)
	}
}
