package egress_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/textslash/textslash/channels/twilio"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/twiliotest"
)

const aliceWhatsApp = "whatsapp:+15551230001"

// withCallbacks makes cfg ask for status callbacks, which a stand-in for
// ingress turns into delivery events (with Twilio's error code).
func (h *harness) withCallbacks(cfg twilio.Config) twilio.Config {
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		u, err := contract.PhoneUser(contract.ChannelWhatsApp, r.Form.Get("To"))
		if err != nil {
			h.t.Errorf("callback To %q", r.Form.Get("To"))
			return
		}
		code, _ := strconv.Atoi(r.Form.Get("ErrorCode"))
		ev := contract.Event{Kind: contract.KindDelivery, User: u, ProviderID: r.Form.Get("MessageSid"), Status: r.Form.Get("MessageStatus"), Code: code}
		_ = bus.PublishEvent(r.Context(), h.js, ev, r.Form.Get("MessageSid")+r.Form.Get("MessageStatus"))
	}))
	h.t.Cleanup(cb.Close)
	cfg.PublicURL, cfg.StatusCallbacks, cfg.SentWait = cb.URL, true, 5*time.Second
	return cfg
}

// held is the number of messages egress holds for u.
func (h *harness) held(u contract.User) int {
	h.t.Helper()
	kv, err := h.js.KeyValue(h.t.Context(), contract.BucketEgress)
	if err != nil {
		h.t.Fatal(err)
	}
	e, err := kv.Get(h.t.Context(), contract.HeldKey(u))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0
	}
	if err != nil {
		h.t.Fatal(err)
	}
	var v struct {
		Msgs []json.RawMessage `json:"msgs"`
	}
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		h.t.Fatalf("held.%s: %v", u.Key(), err)
	}
	return len(v.Msgs)
}

// waitHeld waits until egress holds n messages for u.
func (h *harness) waitHeld(u contract.User, n int) {
	h.t.Helper()
	natstest.CheckFor(h.t, 5*time.Second, 10*time.Millisecond, func() error {
		if got := h.held(u); got != n {
			return fmt.Errorf("%d messages held; want %d", got, n)
		}
		return nil
	})
}

// wrote is the window event ingress publishes when u writes while
// messages are held for them.
func (h *harness) wrote(u contract.User) {
	h.t.Helper()
	h.n++
	ev := contract.Event{Kind: contract.KindWindow, User: u, JobID: fmt.Sprintf("SM%032d", h.n)}
	if err := bus.PublishEvent(h.t.Context(), h.js, ev, contract.MsgID(u, ev.JobID, "window")); err != nil {
		h.t.Fatal(err)
	}
}

// A reply Twilio refuses with 63016 (outside WhatsApp's 24-hour window) is
// held, not lost: its dead letter says so, later messages wait behind it
// (a progress line is dropped), and when the person writes (a window
// event) they go out in order, once, before anything after.
func TestHeldUntilThePersonWrites(t *testing.T) {
	h := start(t, twilio.Config{})
	h.api.FailTo(aliceWhatsApp, 400, twiliotest.CodeOutsideWindow)
	h.publish(contract.Event{Kind: contract.KindDone, User: alice, Text: "the result", Status: contract.StatusOK})
	h.waitHeld(alice, 1)
	dead := h.undelivered()
	if d := dead[0]; !d.Held || d.Code != twiliotest.CodeOutsideWindow || d.Attempts != 1 || d.Text != "the result" {
		t.Errorf("dead letter %+v; want the reply, held, code 63016, after 1 try", d)
	}
	h.publish(contract.Event{Kind: contract.KindProgress, User: alice, Text: "Running `make`"})
	h.publish(contract.Event{Kind: contract.KindNotice, User: alice, Text: "later"})
	h.waitHeld(alice, 2)
	if n := h.api.Attempts(); n != 1 {
		t.Errorf("%d creates; want 1: messages behind a held one are not tried", n)
	}

	h.api.FailTo(aliceWhatsApp, 0, 0)
	h.wrote(alice)
	h.publish(contract.Event{Kind: contract.KindNotice, User: alice, Text: "after"})
	msgs := h.api.WaitMessages(t, 3, 5*time.Second)
	h.wrote(alice) // nothing left: sends nothing
	h.sendsNoMore(3)
	if got, want := bodies(msgs), []string{"the result", "later", "after"}; !slices.Equal(got, want) {
		t.Errorf("sent %q; want %q", got, want)
	}
	if n := h.held(alice); n != 0 {
		t.Errorf("%d messages still held; want none", n)
	}
}

// When Twilio reports 63016 in the status callback (it took the message,
// then could not deliver it), the message is held the same way; with
// TWILIO_CONTENT_SID_WINDOW set, the approved template goes out once, so
// the person knows to write.
func TestHeldWithTemplate(t *testing.T) {
	h, cfg := prepare(t, twilio.Config{})
	tmpl := h.api.AddContent(twiliotest.Content{FriendlyName: "task_finished", Language: "en", Approved: true,
		Types: map[string]json.RawMessage{"twilio/text": json.RawMessage(`{"body":"Your task finished. Reply to see the result."}`)}})
	cfg.WindowContentSID = tmpl.SID
	h.run(h.withCallbacks(cfg))
	h.api.CloseWindow(aliceWhatsApp)
	h.publish(contract.Event{Kind: contract.KindDone, User: alice, Text: "result 1", Status: contract.StatusOK})
	h.publish(contract.Event{Kind: contract.KindDone, User: alice, Text: "result 2", Status: contract.StatusOK})
	h.waitHeld(alice, 2)
	msgs := h.api.WaitMessages(t, 2, 5*time.Second)
	h.sendsNoMore(2)
	if m := msgs[1]; m.ContentSID != tmpl.SID || len(m.ContentVariables) != 0 || m.Form.Has("Body") {
		t.Errorf("second message %+v; want the template by its ContentSid, without variables or body", m)
	}
	if d := h.undelivered()[0]; !d.Held || d.Code != twiliotest.CodeOutsideWindow || d.Text != "result 1" {
		t.Errorf("dead letter %+v; want result 1, held, code 63016", d)
	}

	h.api.OpenWindow(aliceWhatsApp)
	h.wrote(alice)
	msgs = h.api.WaitMessages(t, 4, 5*time.Second)
	h.sendsNoMore(4)
	want := []string{"result 1", "Your task finished. Reply to see the result.", "result 1", "result 2"}
	if got := bodies(msgs); !slices.Equal(got, want) {
		t.Errorf("sent %q; want %q (the refused try, the template, then the held replies)", got, want)
	}
}

// Held messages live in the egress bucket: a restarted egress, given
// every event again (their acks lost), neither sends nor holds them
// twice, and sends them once when the person writes.
func TestHeldAcrossRestarts(t *testing.T) {
	h, cfg := prepare(t, twilio.Config{})
	stop := h.runStoppable(cfg)
	h.api.FailTo(aliceWhatsApp, 400, twiliotest.CodeOutsideWindow)
	h.publish(contract.Event{Kind: contract.KindDone, User: alice, Text: "kept", Status: contract.StatusOK})
	h.publish(contract.Event{Kind: contract.KindNotice, User: alice, Text: "also kept"})
	h.waitHeld(alice, 2)
	restart := func() {
		t.Helper()
		stop()
		name := bus.EgressConsumer(contract.ChannelWhatsApp).Durable
		if err := h.js.DeleteConsumer(t.Context(), contract.StreamEvents, name); err != nil {
			t.Fatal(err)
		}
		stop = h.runStoppable(cfg)
	}
	restart()
	h.api.FailTo(aliceWhatsApp, 0, 0)
	h.sendsNoMore(0)
	h.waitHeld(alice, 2)

	h.wrote(alice)
	h.api.WaitMessages(t, 2, 5*time.Second)
	h.waitHeld(alice, 0)
	restart()
	h.publish(contract.Event{Kind: contract.KindNotice, User: alice, Text: "next"})
	msgs := h.api.WaitMessages(t, 3, 5*time.Second)
	h.sendsNoMore(3)
	stop()
	if got, want := bodies(msgs), []string{"kept", "also kept", "next"}; !slices.Equal(got, want) {
		t.Errorf("sent %q; want %q, each once", got, want)
	}
}
