package egress_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/channels/twilio"

	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/twiliotest"
)

// Every request egress makes is checked against Twilio's own OpenAPI
// description of Messages-create, served by Prism: text, pages, images on
// WhatsApp and SMS must all get 201.
func TestTwilioContract(t *testing.T) {
	prism := twiliotest.StartPrism(t)
	target, _ := url.Parse(prism)
	var mu sync.Mutex
	var statuses []int
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		mu.Lock()
		statuses = append(statuses, r.StatusCode)
		mu.Unlock()
		return nil
	}
	rec := httptest.NewServer(proxy)
	t.Cleanup(rec.Close)

	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, js: ns.JS}
	h.run(twilio.Config{
		AccountSID: twiliotest.ExampleAccountSID, AuthToken: "0123456789abcdef0123456789abcdef",
		From: from, APIURL: rec.URL, PublicURL: "https://pub.example.com", StatusCallbacks: true,
		Allowed:  []string{"+" + alice.ID, "+" + bob.ID},
		SentWait: time.Millisecond, // Prism sends no status callbacks
		Retry:    channel.Retry{Attempts: 1},
	})
	images := []contract.Image{{ID: "a1", ContentType: "image/jpeg", Size: 10}, {ID: "a2", ContentType: "image/png", Size: 10}}
	long := strings.Repeat("a long reply with ünïcode and emoji 👍🏽 ", 120)
	events := []contract.Event{
		{Kind: contract.KindNotice, User: alice, Text: "Got it, I'll process this next."},
		{Kind: contract.KindProgress, User: bob, Text: "Running `npm test`"},
		{Kind: contract.KindDone, User: alice, Text: "hi", Status: contract.StatusOK},
		{Kind: contract.KindDone, User: alice, Text: "", Images: images, Status: contract.StatusOK},
		{Kind: contract.KindDone, User: bob, Text: "shots", Images: images, Status: contract.StatusOK},
		{Kind: contract.KindDone, User: alice, Text: long, Images: images, Status: contract.StatusOK},
		{Kind: contract.KindMore, User: alice},
		{Kind: contract.KindMore, User: alice},
	}
	// alice: notice, hi, 2 images, page 1 + 1 image, 1 image, page 2, page 3 (or "nothing more")
	// bob: progress, text + 2 images (MMS)
	const want = 1 + 1 + 2 + 2 + 1 + 1 + 1 + 1
	for _, ev := range events {
		h.publish(ev)
	}
	natstest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(statuses) < want {
			return fmt.Errorf("%d of %d requests", len(statuses), want)
		}
		return nil
	})
	natstest.HoldsUntil(t, time.Now().Add(300*time.Millisecond), func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(statuses) != want {
			return fmt.Errorf("%d requests; want %d", len(statuses), want)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for i, s := range statuses {
		if s != http.StatusCreated {
			t.Errorf("request %d: Prism answered %d; want 201", i+1, s)
		}
	}
}
