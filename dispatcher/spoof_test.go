package dispatcher_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
)

// A message belongs to the channel it was published on: a payload whose
// user is not the person its subject names (a channel's NATS login acting
// as a person of another channel, or another person of its own) runs
// nothing, queues nothing, changes no state and answers nobody, whoever
// it claims to be, an admin included.
func TestSpoofedInboundRunsNothing(t *testing.T) {
	h := provisioned(t)
	h.runWith(dispatcher.Config{Admins: []string{"web.admin", "phone.15550001111"}})
	victims := []contract.User{
		{Channel: contract.ChannelWeb, ID: "admin"},
		{Channel: contract.ChannelWhatsApp, ID: "p_15550001111"},
		{Channel: contract.ChannelSMS, ID: "p_15550001111"},
		{Channel: contract.ChannelTelegram, ID: "42"},
		{Channel: "discord", ID: "D1"},
	}
	// Each channel's subject, as its login may publish it.
	publishers := []contract.User{
		{Channel: "slack", ID: "U1"},
		{Channel: "discord", ID: "D2"},
		{Channel: contract.ChannelWeb, ID: "mallory"},
		{Channel: contract.ChannelTelegram, ID: "7"},
		{Channel: contract.ChannelWhatsApp, ID: "p_15559990000"},
	}
	var last uint64
	for i, from := range publishers {
		for j, victim := range victims {
			if victim == from {
				continue
			}
			for k, text := range []string{"echo pwned; pwd", "pair", "status"} {
				id := fmt.Sprintf("spoof-%d-%d-%d", i, j, k)
				in := contract.Inbound{ID: id, User: victim, Text: text, At: time.Now().UTC()}
				data, err := contract.Encode(&in)
				if err != nil {
					t.Fatal(err)
				}
				ack, err := h.js.Publish(t.Context(), contract.InboundSubject(from), data, jetstream.WithMsgID(contract.MsgID(from, id)))
				if err != nil {
					t.Fatal(err)
				}
				last = ack.Sequence
			}
		}
	}
	h.inboundHandled(last)
	for _, u := range append(victims, publishers...) {
		if jobs := h.jobs(u); len(jobs) != 0 {
			t.Errorf("%s: %d jobs ran; want none", u.Key(), len(jobs))
		}
		if q := h.queued(u); len(q) != 0 {
			t.Errorf("%s: %q queued; want nothing", u.Key(), q)
		}
		if n := h.notices(u); len(n) != 0 {
			t.Errorf("%s: told %q; want nothing", u.Key(), n)
		}
		if _, rev := h.state(u); rev != 0 {
			t.Errorf("%s: has a state (revision %d); want none", u.Key(), rev)
		}
	}
	// The person the subject names is still served.
	seq := h.send(publishers[0], "real", "echo hi")
	h.inboundHandled(seq)
	h.waitJobs(publishers[0], "real")
}
