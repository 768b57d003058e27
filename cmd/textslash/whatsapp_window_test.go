package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/textslash/textslash/cmd/internal/app"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/twiliotest"
)

// windowTemplate is the Content SID of the approved template the test
// configures as TWILIO_CONTENT_SID_WINDOW.
const windowTemplate = "HX0123456789abcdef0123456789abcdef"

// A reply that comes after the person's WhatsApp window closed is refused
// by Twilio (63016 in its status callback): textslash holds it and sends
// the approved template once; it survives a crash of textslash; when the
// person writes again (a signed webhook) the held reply goes out, once,
// before the reply to what they wrote.
func TestWhatsAppReplyAfterTheWindow(t *testing.T) {
	s := startTwilioServe(t, "TWILIO_CONTENT_SID_WINDOW="+windowTemplate)
	s.api.AddContent(twiliotest.Content{SID: windowTemplate, FriendlyName: "task_finished", Language: "en", Approved: true,
		Types: map[string]json.RawMessage{"twilio/text": json.RawMessage(`{"body":"Your task finished. Reply to see the result."}`)}})
	from := "whatsapp:" + phoneAlice

	s.api.CloseWindow(from) // the reply comes as if a day had gone by
	s.webhook(t, from, "echo the result", nil)
	tmpl := waitBody(t, s.api, "Your task finished.")
	if tmpl.ContentSID != windowTemplate || len(tmpl.ContentVariables) != 0 {
		t.Errorf("template sent with %s %v; want %s without variables", tmpl.ContentSID, tmpl.ContentVariables, windowTemplate)
	}

	// Killed once egress recorded the template: a kill between Twilio
	// taking it and egress recording it would send it again (Find cannot
	// tell a template's message by its body, which Twilio renders), which
	// is the at-least-once window egress documents, not what this tests.
	egressSettled(t, s.adminURL(t))
	s.kill()
	s.start(t)
	s.api.OpenWindow(from) // the person writes: Twilio lets free-form messages through again
	s.webhook(t, from, "echo next", nil)
	waitBody(t, s.api, "next")
	natstest.HoldsUntil(t, time.Now().Add(time.Second), func() error {
		if n := len(s.api.Messages()); n != 4 {
			return fmt.Errorf("sent %q; want 4 messages", sentBodies(s.api.Messages()))
		}
		return nil
	})
	want := []string{"the result", "Your task finished. Reply to see the result.", "the result", "next"}
	if got := sentBodies(s.api.Messages()); !slices.Equal(got, want) {
		t.Errorf("sent %q; want %q (refused, the template, then the held reply before the next)", got, want)
	}
}

// The same with each service apart, as its own user of nats.conf: ingress
// may look up the held messages and announce the window, egress may keep
// and list them, and NATS refuses nothing.
func TestWhatsAppWindowSeparateServices(t *testing.T) {
	ns := runNATSUsers(t)
	api := twiliotest.NewAPI(t)
	api.AddContent(twiliotest.Content{SID: windowTemplate, FriendlyName: "task_finished", Language: "en", Approved: true,
		Types: map[string]json.RawMessage{"twilio/text": json.RawMessage(`{"body":"Your task finished. Reply to see the result."}`)}})
	procs := map[string]*instance{}
	front := frontProxy(t, procs)
	env := append(servicesEnv(api, front.URL), "TWILIO_CONTENT_SID_WINDOW="+windowTemplate)
	for _, svc := range app.All {
		procs[svc] = startService(t, svc, append(slices.Clone(env), ns.env(svc)...)...)
	}
	s := &twilioServe{instance: &instance{URL: front.URL}, api: api}
	from := "whatsapp:" + phoneAlice

	api.CloseWindow(from)
	s.webhook(t, from, "echo the result", nil)
	waitBody(t, api, "Your task finished.")
	api.OpenWindow(from)
	s.webhook(t, from, "echo next", nil)
	waitBody(t, api, "next")
	want := []string{"the result", "Your task finished. Reply to see the result.", "the result", "next"}
	if got := sentBodies(api.Messages()); !slices.Equal(got, want) {
		t.Errorf("sent %q; want %q", got, want)
	}
	if v := ns.violations(); len(v) > 0 {
		t.Errorf("NATS refused the services %d times:\n%s", len(v), strings.Join(v, "\n"))
	}
}

// egressSettled waits until WhatsApp's egress holds no event in hand nor
// any left to send, on the NATS at url.
func egressSettled(t *testing.T, url string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	natstest.CheckFor(t, 15*time.Second, 20*time.Millisecond, func() error { return egressIdle(t.Context(), js) })
}
