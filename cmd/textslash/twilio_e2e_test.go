package main

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/twiliotest"
)

const (
	twilioFrom = "+15550000000"
	phoneAlice = "+15551230001"
)

// twilioServe runs the all-in-one with WhatsApp and SMS on, talking to a
// fake Twilio API; PUBLIC_URL is the instance itself, so the fake's status
// callbacks reach ingress.
type twilioServe struct {
	*instance
	api *twiliotest.API
	n   int
}

func startTwilioServe(t *testing.T, env ...string) *twilioServe {
	t.Helper()
	api := twiliotest.NewAPI(t)
	inst := startServeOn(t, func(port string) []string {
		return append([]string{
			"PUBLIC_URL=http://127.0.0.1:" + port, // what Twilio signs
			"TWILIO_ACCOUNT_SID=" + api.AccountSID,
			"TWILIO_AUTH_TOKEN=" + api.AuthToken,
			"TWILIO_PHONE_NUMBER=" + twilioFrom,
			"TEXTSLASH_TWILIO_API_URL=" + api.URL,
			"ALLOWED_PHONE_NUMBERS=" + phoneAlice + ", +15551230002",
			"TEXTSLASH_AGENT=shell",
		}, env...)
	})
	return &twilioServe{instance: inst, api: api}
}

// webhook sends a signed inbound message as Twilio would and returns its
// MessageSid.
func (s *twilioServe) webhook(t *testing.T, from, body string, extra url.Values) string {
	t.Helper()
	s.n++
	sid := fmt.Sprintf("SM%032d", s.n)
	s.webhookSID(t, sid, from, body, extra)
	return sid
}

func (s *twilioServe) webhookSID(t *testing.T, sid, from, body string, extra url.Values) {
	t.Helper()
	form := twiliotest.InboundParams(from, "whatsapp:"+twilioFrom, body, sid)
	for k, v := range extra {
		form[k] = v
	}
	req := twiliotest.SignedRequest(s.api.AuthToken, s.URL+"/webhook", s.URL+"/webhook", form)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook: status %d", resp.StatusCode)
	}
}

func sentBodies(msgs []twiliotest.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Body)
	}
	return out
}

// A signed "echo hi" from an allowlisted WhatsApp number yields exactly one
// message to that number, "hi"; a sender not on the list gets nothing.
func TestWhatsAppEcho(t *testing.T) {
	s := startTwilioServe(t)
	s.webhook(t, "whatsapp:+15559990000", "echo intruder", nil)
	s.webhook(t, "whatsapp:"+phoneAlice, "echo hi", nil)
	s.api.WaitMessages(t, 1, 15*time.Second)
	natstest.HoldsUntil(t, time.Now().Add(500*time.Millisecond), func() error {
		if msgs := s.api.Messages(); len(msgs) != 1 {
			return fmt.Errorf("sent %q; want one message", sentBodies(msgs))
		}
		return nil
	})
	msgs := s.api.Messages()
	if m := msgs[0]; m.To != "whatsapp:"+phoneAlice || m.From != "whatsapp:"+twilioFrom || m.Body != "hi" {
		t.Errorf("sent %+v; want hi to whatsapp:%s", m, phoneAlice)
	}
}

// Twilio's retries carry the same MessageSid: the message runs once.
func TestWhatsAppRetriedWebhookRunsOnce(t *testing.T) {
	s := startTwilioServe(t)
	for range 3 {
		s.webhookSID(t, "SMdup0000000000000000000000000001", phoneAlice, "echo run >> runs.txt; wc -l < runs.txt", nil)
	}
	s.api.WaitMessages(t, 1, 15*time.Second)
	s.webhook(t, phoneAlice, "wc -l < runs.txt", nil)
	msgs := s.api.WaitMessages(t, 2, 15*time.Second)
	if got := sentBodies(msgs); got[0] != "1" || got[1] != "1" {
		t.Errorf("replies %q; want the message run once", got)
	}
	if m := msgs[0]; m.To != phoneAlice || m.From != twilioFrom {
		t.Errorf("SMS reply %+v; want to %s from %s", m, phoneAlice, twilioFrom)
	}
}

// A 4,000-character reply arrives as pages, in order, each after the
// previous was reported sent; MORE brings the next.
func TestWhatsAppLongReplyPaged(t *testing.T) {
	s := startTwilioServe(t)
	s.webhook(t, "whatsapp:"+phoneAlice, `for i in $(seq 1 130); do echo "line $i: all work and no play"; done`, nil)
	first := s.api.WaitMessages(t, 1, 15*time.Second)[0]
	if !strings.HasPrefix(first.Body, "line 1: ") || !strings.HasSuffix(first.Body, "Reply MORE for the rest (page 1/3)") {
		t.Fatalf("first page: %q", first.Body)
	}
	s.webhook(t, "whatsapp:"+phoneAlice, "more", nil)
	s.webhook(t, "whatsapp:"+phoneAlice, "MORE", nil)
	msgs := s.api.WaitMessages(t, 3, 15*time.Second)
	if !strings.HasSuffix(msgs[1].Body, "(page 2/3)") || !strings.HasSuffix(msgs[2].Body, "line 130: all work and no play\n\n(page 3/3)") {
		t.Errorf("pages: %q", sentBodies(msgs))
	}
	var all string
	for _, m := range msgs {
		if n := len([]rune(m.Body)); n > 1600 {
			t.Errorf("page of %d characters", n)
		}
		all += m.Body[:strings.LastIndex(m.Body, "\n\n")] + "\n"
	}
	for i := 1; i <= 130; i++ {
		if !strings.Contains(all, fmt.Sprintf("line %d: all work and no play\n", i)) {
			t.Fatalf("line %d missing from the pages", i)
		}
	}
	for i, m := range msgs {
		if m.StatusCallback != s.URL+"/twilio/status" {
			t.Errorf("message %d asks for status callbacks at %q", i+1, m.StatusCallback)
		}
	}
}

// An image the person sends lands in their workspace's inbox, fetched from
// Twilio by ingress with the account's credentials.
func TestWhatsAppInboundImage(t *testing.T) {
	s := startTwilioServe(t)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	mediaURL := s.api.AddMedia("image/png", buf.Bytes())
	sid := s.webhook(t, "whatsapp:"+phoneAlice, "ls inbox; wc -c < inbox/*", url.Values{
		"NumMedia": {"1"}, "MediaUrl0": {mediaURL}, "MediaContentType0": {"image/png"},
	})
	reply := s.api.WaitMessages(t, 1, 15*time.Second)[0].Body
	want := fmt.Sprintf("%s-1.png\n%d", sid, buf.Len())
	if reply != want {
		t.Errorf("reply %q; want %q", reply, want)
	}
}

// Images an agent hands over reach WhatsApp one per message, in order,
// each by a signed link Twilio can fetch (HEAD and GET) from PUBLIC_URL.
func TestWhatsAppImagesFromAgent(t *testing.T) {
	src := sharedDir(t)
	for i, name := range []string{"a.png", "b.png", "c.png"} {
		var buf bytes.Buffer
		img := image.NewGray(image.Rect(0, 0, 40+i, 30))
		if err := png.Encode(&buf, img); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Two reported on stdout, the third dropped in tmp/ai_screenshots.
	agent := fmt.Sprintf(`cat > /dev/null; mkdir -p shots tmp/ai_screenshots
cp %[1]s/a.png %[1]s/b.png shots/ && cp %[1]s/c.png tmp/ai_screenshots/
echo "SCREENSHOT_CAPTURED:shots/a.png"; echo "SCREENSHOT_CAPTURED:shots/b.png"; echo "three shots"`, src)
	s := startTwilioServe(t, "TEXTSLASH_AGENT="+agent, "TEXTSLASH_SANDBOX_SHARE="+src)
	s.webhook(t, "whatsapp:"+phoneAlice, "show me", nil)
	msgs := s.api.WaitMessages(t, 3, 15*time.Second)
	if got := sentBodies(msgs); !slices.Equal(got, []string{"three shots", "", ""}) {
		t.Errorf("bodies %q; want the text with the first image, then two image-only messages", got)
	}
	widths := []int{40, 41, 42}
	for i, m := range msgs {
		if len(m.MediaURLs) != 1 || !strings.HasPrefix(m.MediaURLs[0], s.URL+"/images/") {
			t.Fatalf("message %d media %q; want one link under PUBLIC_URL/images/", i+1, m.MediaURLs)
		}
		head, err := http.Head(m.MediaURLs[0])
		if err != nil || head.StatusCode != 200 || head.Header.Get("Content-Type") != "image/jpeg" {
			t.Fatalf("HEAD %s: %v %v", m.MediaURLs[0], err, head)
		}
		resp, err := http.Get(m.MediaURLs[0])
		if err != nil {
			t.Fatal(err)
		}
		cfg, format, err := image.DecodeConfig(resp.Body)
		resp.Body.Close()
		if err != nil || format != "jpeg" || cfg.Width != widths[i] {
			t.Errorf("image %d: %s %dx%d, %v; want a jpeg %d wide (in order)", i+1, format, cfg.Width, cfg.Height, err, widths[i])
		}
		u, _ := url.Parse(m.MediaURLs[0])
		if resp, _ := http.Get(s.URL + u.Path); resp.StatusCode != http.StatusForbidden {
			t.Errorf("unsigned %s: %d; want 403", u.Path, resp.StatusCode)
		}
	}
}

// Whoever can publish to EVENTS — here NATS's admin — cannot make
// textslash text a number nobody allowed: egress drops the event, logs it
// and counts it; allowed people are answered as before.
func TestWhatsAppNoReplyToStrangers(t *testing.T) {
	s := startTwilioServe(t)
	nc, err := nats.Connect(s.adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stranger := contract.User{Channel: contract.ChannelSMS, ID: "15559990000"}
	ev := contract.Event{Kind: contract.KindDone, User: stranger, JobID: "x1", Text: "Your bank account is locked: http://phish.example", Status: contract.StatusOK}
	if err := bus.PublishEvent(t.Context(), js, ev, "forged-1"); err != nil {
		t.Fatalf("publish as admin: %v", err)
	}
	s.webhook(t, "whatsapp:"+phoneAlice, "echo hi", nil)
	msgs := s.api.WaitMessages(t, 1, 20*time.Second)
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(metrics(t, s.instance), `textslash_egress_refused_total{channel="sms"} 1`) {
			return errors.New("no refusal counted in /metrics")
		}
		return nil
	})
	for _, m := range s.api.Messages() {
		if strings.Contains(m.To, stranger.ID) {
			t.Errorf("texted a number nobody allowed: %+v", m)
		}
	}
	if len(msgs) != 1 || msgs[0].Body != "hi" {
		t.Errorf("sent %+v; want alice's hi only", msgs)
	}
}

// metrics is inst's /metrics page.
func metrics(t *testing.T, inst *instance) string {
	t.Helper()
	resp, err := http.Get(inst.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
