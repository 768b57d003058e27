package ingress_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/twilio"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/twiliotest"
)

const (
	token     = "0123456789abcdef0123456789abcdef"
	publicURL = "https://textslash.example.com"
	alice     = "+15551230001" // allowlisted
	mallory   = "+15559990000" // not allowlisted
)

type twilioHarness struct {
	t   testing.TB
	js  jetstream.JetStream
	srv *httptest.Server
	in  *ingress.Ingress
}

// twilioChannels are the WhatsApp and SMS channels of tw on js, its zero
// settings given the test's values, as an ingress runs them.
func twilioChannels(t testing.TB, js jetstream.JetStream, tw twilio.Config) []channel.Channel {
	t.Helper()
	if tw.AuthToken == "" {
		tw.AuthToken = token
	}
	if tw.AccountSID == "" {
		tw.AccountSID = "AC0123456789abcdef0123456789abcdef"
	}
	if tw.PublicURL == "" {
		tw.PublicURL = publicURL
	}
	if tw.Allowed == nil {
		tw.Allowed = []string{alice, "whatsapp:+15551230002"}
	}
	tw.From = "+15550000000" // egress's side, which sends
	ch, err := twilio.New(tw, js, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return ch.Channels()
}

func startTwilio(t testing.TB, tw twilio.Config) *twilioHarness {
	t.Helper()
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	in, err := ingress.New(ingress.Config{Channels: twilioChannels(t, ns.JS, tw)}, ns.JS, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(in.Handler())
	t.Cleanup(srv.Close)
	return &twilioHarness{t: t, js: ns.JS, srv: srv, in: in}
}

// post sends a form to path, signed (when sign) for the public URL.
func (h *twilioHarness) post(path string, form url.Values, sign bool) *http.Response {
	h.t.Helper()
	sig := ""
	if sign {
		sig = twiliotest.Sign(token, publicURL+path, form)
	}
	return h.postSigned(path, form.Encode(), sig)
}

// postSigned sends body to path with signature sig (none when empty).
func (h *twilioHarness) postSigned(path, body, sig string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sig != "" {
		req.Header.Set("X-Twilio-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	return resp
}

// stored is every message of stream on subjects matching filter.
func (h *twilioHarness) stored(stream, filter string) []*jetstream.RawStreamMsg {
	h.t.Helper()
	ctx := h.t.Context()
	s, err := h.js.Stream(ctx, stream)
	if err != nil {
		h.t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		if filter == "" || strings.HasPrefix(m.Subject, strings.TrimSuffix(filter, ">")) {
			out = append(out, m)
		}
	}
	return out
}

func (h *twilioHarness) inbound() []contract.Inbound {
	h.t.Helper()
	var out []contract.Inbound
	for _, m := range h.stored(contract.StreamIn, "") {
		var in contract.Inbound
		if err := contract.Decode(m.Data, &in); err != nil {
			h.t.Fatal(err)
		}
		if got, want := m.Subject, contract.InboundSubject(in.User); got != want {
			h.t.Errorf("subject: got %s; want %s", got, want)
		}
		out = append(out, in)
	}
	return out
}

func inboundForm(from, body, sid string) url.Values {
	return url.Values{
		"MessageSid": {sid}, "SmsMessageSid": {sid}, "AccountSid": {"AC00000000000000000000000000000000"},
		"From": {from}, "To": {"whatsapp:+15550000000"}, "Body": {body}, "NumMedia": {"0"},
		"ProfileName": {"Alice"}, "ApiVersion": {"2010-04-01"},
	}
}

const sid1 = "SM0123456789abcdef0123456789abcdef"

func TestTwilioWebhook(t *testing.T) {
	withMedia := inboundForm("whatsapp:"+alice, "", sid1)
	withMedia.Set("NumMedia", "2")
	withMedia.Set("MediaUrl0", "https://api.twilio.com/a")
	withMedia.Set("MediaContentType0", "image/jpeg")
	withMedia.Set("MediaUrl1", "https://api.twilio.com/b")
	withMedia.Set("MediaContentType1", "application/pdf")
	voice := inboundForm("whatsapp:"+alice, "", sid1)
	voice.Set("NumMedia", "1")
	voice.Set("MediaUrl0", "https://api.twilio.com/v")
	voice.Set("MediaContentType0", "audio/ogg")
	extra := inboundForm("whatsapp:"+alice, "hi", sid1)
	extra.Set("SomethingNew", "x")
	// A quick-reply button's press: Body and ButtonText are its title.
	button := func(payload, title string) url.Values {
		f := inboundForm("whatsapp:"+alice, title, sid1)
		f.Set("MessageType", "button")
		f.Set("ButtonPayload", payload)
		f.Set("ButtonText", title)
		return f
	}
	buttonTextOnly := button("", "Yes")
	buttonTextOnly.Set("Body", "")

	tests := []struct {
		name   string
		path   string
		form   url.Values
		sign   bool
		status int
		want   *contract.Inbound
	}{
		{"whatsapp", "/webhook", inboundForm("whatsapp:"+alice, "echo hi", sid1), true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "whatsapp", ID: "15551230001"}, Text: "echo hi"}},
		{"sms on /sms", "/sms", inboundForm(alice, "echo hi", sid1), true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "sms", ID: "15551230001"}, Text: "echo hi"}},
		{"allowlisted with whatsapp: prefix", "/webhook", inboundForm("+15551230002", "x", sid1), true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "sms", ID: "15551230002"}, Text: "x"}},
		{"media", "/webhook", withMedia, true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "whatsapp", ID: "15551230001"}, Media: []contract.Media{
				{URL: "https://api.twilio.com/a", ContentType: "image/jpeg"}, {URL: "https://api.twilio.com/b", ContentType: "application/pdf"}}}},
		{"voice note", "/webhook", voice, true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "whatsapp", ID: "15551230001"}, Media: []contract.Media{
				{URL: "https://api.twilio.com/v", ContentType: "audio/ogg", Voice: true}}}},
		{"extra fields", "/webhook", extra, true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "whatsapp", ID: "15551230001"}, Text: "hi"}},
		{"button yes", "/webhook", button("yes", "Yes"), true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "whatsapp", ID: "15551230001"}, Text: "yes"}},
		{"button approve titled otherwise", "/webhook", button("approve", "Approve ✅"), true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "whatsapp", ID: "15551230001"}, Text: "approve"}},
		{"button of another payload", "/webhook", button("menu_1", "Show the menu"), true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "whatsapp", ID: "15551230001"}, Text: "Show the menu"}},
		{"button text without a body", "/webhook", buttonTextOnly, true, 200,
			&contract.Inbound{ID: sid1, User: contract.User{Channel: "whatsapp", ID: "15551230001"}, Text: "Yes"}},
		{"button unsigned", "/webhook", button("yes", "Yes"), false, 403, nil},
		{"unsigned", "/webhook", inboundForm("whatsapp:"+alice, "hi", sid1), false, 403, nil},
		{"not allowlisted", "/webhook", inboundForm("whatsapp:"+mallory, "hi", sid1), true, 200, nil},
		{"unsupported sender", "/webhook", inboundForm("messenger:123", "hi", sid1), true, 200, nil},
		{"no MessageSid", "/webhook", func() url.Values { f := inboundForm(alice, "hi", sid1); f.Del("MessageSid"); return f }(), true, 400, nil},
		{"MessageSid with a dot", "/webhook", inboundForm(alice, "hi", "SM.x"), true, 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startTwilio(t, twilio.Config{})
			resp := h.post(tt.path, tt.form, tt.sign)
			if resp.StatusCode != tt.status {
				t.Fatalf("status: got %d; want %d", resp.StatusCode, tt.status)
			}
			if tt.status == 200 {
				body, _ := io.ReadAll(resp.Body)
				if ct := resp.Header.Get("Content-Type"); ct != "text/xml" || !strings.Contains(string(body), "<Response/>") {
					t.Errorf("answer: %s %q; want text/xml with an empty <Response/>", ct, body)
				}
			}
			got := h.inbound()
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("stored %+v; want nothing", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("stored %d messages; want 1", len(got))
			}
			g := got[0]
			if g.ID != tt.want.ID || g.User != tt.want.User || g.Text != tt.want.Text || len(g.Media) != len(tt.want.Media) {
				t.Fatalf("stored %+v; want %+v", g, *tt.want)
			}
			for i := range g.Media {
				if g.Media[i] != tt.want.Media[i] {
					t.Errorf("media %d: got %+v; want %+v", i, g.Media[i], tt.want.Media[i])
				}
			}
		})
	}
}

func TestTwilioWebhookBadRequests(t *testing.T) {
	h := startTwilio(t, twilio.Config{})
	post := func(body string, sign bool) int {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/webhook", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if sign {
			form, _ := url.ParseQuery(body)
			req.Header.Set("X-Twilio-Signature", twiliotest.Sign(token, publicURL+"/webhook", form))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("Body=%zz&From=x", true); got != 400 {
		t.Errorf("malformed form: got %d; want 400", got)
	}
	big := inboundForm(alice, strings.Repeat("x", 70<<10), sid1).Encode()
	if got := post(big, true); got != 413 {
		t.Errorf("oversized body: got %d; want 413", got)
	}
	if got := post("", false); got != 403 {
		t.Errorf("empty unsigned: got %d; want 403", got)
	}
	if got := h.inbound(); len(got) != 0 {
		t.Errorf("stored %+v; want nothing", got)
	}
}

// A message Twilio sends again (its retries carry the same MessageSid) is
// stored once.
func TestTwilioWebhookDedup(t *testing.T) {
	h := startTwilio(t, twilio.Config{})
	for range 3 {
		if resp := h.post("/webhook", inboundForm("whatsapp:"+alice, "echo hi", sid1), true); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	h.post("/webhook", inboundForm("whatsapp:"+alice, "echo hi", "SM2"), true)
	if got := h.inbound(); len(got) != 2 || got[0].ID != sid1 || got[1].ID != "SM2" {
		t.Fatalf("stored %+v; want %s and SM2 once each", got, sid1)
	}
}

// Behind a proxy the server sees another URL than Twilio signed: the
// signature is checked against PUBLIC_URL, path prefix and query included.
func TestTwilioWebhookPublicURL(t *testing.T) {
	h := startTwilio(t, twilio.Config{PublicURL: "https://example.com/ts/"})
	form := inboundForm("whatsapp:"+alice, "hi", sid1)
	path := "/webhook?route=a%20b"
	tests := []struct {
		name, signed string
		status       int
	}{
		{"as Twilio signed it", "https://example.com/ts" + path, 200},
		{"explicit :443", "https://example.com:443/ts" + path, 200},
		{"http instead of https", "http://example.com/ts" + path, 403},
		{"without the query", "https://example.com/ts/webhook", 403},
		{"the server's own URL", h.srv.URL + path, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if resp := h.postSigned(path, form.Encode(), twiliotest.Sign(token, tt.signed, form)); resp.StatusCode != tt.status {
				t.Errorf("status: got %d; want %d", resp.StatusCode, tt.status)
			}
		})
	}
}

// Signatures made by Twilio's own npm package validate; tampering with the
// body, the URL or its scheme does not.
func TestTwilioSignatureFromNPM(t *testing.T) {
	h := startTwilio(t, twilio.Config{})
	form := inboundForm("whatsapp:"+alice, "héllo 👋 & <b>", sid1)
	form.Set("MediaUrl0", "https://api.twilio.com/x?y=1")
	tamperedBody := inboundForm("whatsapp:"+alice, "rm -rf /", sid1)
	tests := []struct {
		name      string
		signedURL string
		signed    url.Values
		sent      url.Values
		status    int
	}{
		{"as signed", publicURL + "/webhook", form, form, 200},
		{"body changed", publicURL + "/webhook", form, tamperedBody, 403},
		{"url changed", publicURL + "/sms", form, form, 403},
		{"scheme changed", "http://textslash.example.com/webhook", form, form, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig := twiliotest.NodeSign(t, token, tt.signedURL, tt.signed)
			if resp := h.postSigned("/webhook", tt.sent.Encode(), sig); resp.StatusCode != tt.status {
				t.Errorf("status: got %d; want %d", resp.StatusCode, tt.status)
			}
		})
	}
}

func TestTwilioStatusCallback(t *testing.T) {
	h := startTwilio(t, twilio.Config{})
	form := url.Values{"MessageSid": {"SMaaa"}, "MessageStatus": {"undelivered"}, "ErrorCode": {"63016"},
		"To": {"whatsapp:" + alice}, "From": {"whatsapp:+15550000000"}, "AccountSid": {"AC0"}}
	if resp := h.post("/twilio/status", form, true); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	h.post("/twilio/status", form, true) // Twilio's retry: stored once
	if resp := h.post("/twilio/status", form, false); resp.StatusCode != 403 {
		t.Errorf("unsigned: got %d; want 403", resp.StatusCode)
	}
	msgs := h.stored(contract.StreamEvents, "ts.ev.>")
	if len(msgs) != 1 {
		t.Fatalf("stored %d events; want 1", len(msgs))
	}
	var ev contract.Event
	if err := contract.Decode(msgs[0].Data, &ev); err != nil {
		t.Fatal(err)
	}
	want := contract.Event{Kind: contract.KindDelivery, User: contract.User{Channel: "whatsapp", ID: "15551230001"},
		ProviderID: "SMaaa", Status: "undelivered", Code: 63016}
	if ev.Kind != want.Kind || ev.User != want.User || ev.ProviderID != want.ProviderID || ev.Status != want.Status || ev.Code != want.Code {
		t.Errorf("event %+v; want %+v", ev, want)
	}
	if got, want := msgs[0].Subject, "ts.ev.whatsapp.15551230001.delivery"; got != want {
		t.Errorf("subject %s; want %s", got, want)
	}
}

// The runner asks ingress for a person's image; ingress fetches it from
// Twilio with the account's credentials and stores it. URLs elsewhere are
// refused: the service must not fetch whatever it is asked to.
func TestMediaFetch(t *testing.T) {
	api := twiliotest.NewAPI(t)
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	in, err := ingress.New(ingress.Config{Channels: twilioChannels(t, ns.JS, twilio.Config{
		AuthToken: api.AuthToken, AccountSID: api.AccountSID, APIURL: api.URL,
		PublicURL: publicURL, Allowed: []string{alice},
	})}, ns.JS, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.White)
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	good := api.AddMedia("image/png", buf.Bytes())
	text := api.AddMedia("text/plain", []byte("hello"))
	u := contract.User{Channel: "whatsapp", ID: "15551230001"}

	ask := func(mediaURL string) (contract.Image, string) {
		t.Helper()
		data, _ := contract.Encode(&contract.MediaFetch{User: u, Media: contract.Media{URL: mediaURL, ContentType: "image/png"}})
		var resp *nats.Msg
		natstest.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() (err error) {
			resp, err = ns.NC.Request(contract.MediaFetchSubject(u.Channel), data, 5*time.Second)
			return err
		})
		if code := resp.Header.Get(micro.ErrorCodeHeader); code != "" {
			return contract.Image{}, code
		}
		var out contract.Image
		if err := json.Unmarshal(resp.Data, &out); err != nil {
			t.Fatal(err)
		}
		return out, ""
	}
	got, code := ask(good)
	if code != "" || got.ContentType != "image/png" || got.Size != buf.Len() {
		t.Fatalf("fetch: got %+v, error %q; want the png", got, code)
	}
	store, _ := ns.JS.ObjectStore(t.Context(), contract.BucketMedia)
	if data, err := store.GetBytes(t.Context(), got.ID); err != nil || !bytes.Equal(data, buf.Bytes()) {
		t.Errorf("stored image: %v", err)
	}
	// Any file is taken, with the type the provider gave; a declared image
	// that is not one is stored as what it is.
	for _, tc := range []struct{ url, declared, want string }{
		{text, "text/plain", "text/plain"},
		{text, "image/png", "text/plain; charset=utf-8"},
	} {
		data, _ := contract.Encode(&contract.MediaFetch{User: u, Media: contract.Media{URL: tc.url, ContentType: tc.declared, Name: "notes.txt"}})
		resp, err := ns.NC.Request(contract.MediaFetchSubject(u.Channel), data, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var f contract.Image
		if code := resp.Header.Get(micro.ErrorCodeHeader); code != "" || json.Unmarshal(resp.Data, &f) != nil {
			t.Fatalf("text file declared %s: error %q", tc.declared, code)
		}
		if f.ContentType != tc.want || f.Name != "notes.txt" || f.Size != 5 {
			t.Errorf("text file declared %s: %+v; want %s named notes.txt", tc.declared, f, tc.want)
		}
		if data, err := store.GetBytes(t.Context(), f.ID); err != nil || string(data) != "hello" {
			t.Errorf("stored file: %q, %v", data, err)
		}
	}
	// A file over the limit is refused as too large, so the person can be told.
	big := api.AddMedia("application/pdf", bytes.Repeat([]byte("x"), 16<<20+1))
	if _, code := ask(big); code != "413" {
		t.Errorf("file over the limit: error %q; want 413", code)
	}
	if _, code := ask("http://169.254.169.254/latest/meta-data"); code != "403" {
		t.Errorf("foreign URL: error %q; want 403", code)
	}
	if _, code := ask(api.URL + "/2010-04-01/Accounts/ACother/Messages/MM1/Media/ME1"); code != "403" {
		t.Errorf("other account: error %q; want 403", code)
	}
}

// FuzzTwilioWebhook: whatever a signed (or unsigned) body holds, the
// webhook answers 200, 400, 403 or 413, and never fails or panics.
func FuzzTwilioWebhook(f *testing.F) {
	f.Add(inboundForm("whatsapp:"+alice, "echo hi", sid1).Encode(), true)
	f.Add("MessageSid=SM1&From=%2B15551230001&NumMedia=99&MediaUrl98=x", true)
	f.Add("MessageSid=SM1&From=whatsapp:&Body=%zz", true)
	f.Add("NumMedia=-1&MessageSid=SM1&From=%2B15551230001&MediaUrl0=", false)
	f.Add("MessageSid=SM1&From=whatsapp:%2B15551230001&ButtonPayload=yes&ButtonText=&Body=", true)
	h := startTwilio(f, twilio.Config{})
	f.Fuzz(func(t *testing.T, body string, sign bool) {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/webhook", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if form, err := url.ParseQuery(body); err == nil && sign {
			req.Header.Set("X-Twilio-Signature", twiliotest.Sign(token, publicURL+"/webhook", form))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case 200, 400, 403, 413:
		default:
			t.Fatalf("status %d for %q", resp.StatusCode, body)
		}
	})
}

// A WhatsApp message from a person egress holds messages for
// (contract.HeldKey) is announced as a window event, once per MessageSid,
// and goes on to the dispatcher as usual; without held messages, or once
// they are gone, or on SMS, there is none.
func TestTwilioWebhookOpensWindow(t *testing.T) {
	h := startTwilio(t, twilio.Config{})
	kv, err := h.js.KeyValue(t.Context(), contract.BucketEgress)
	if err != nil {
		t.Fatal(err)
	}
	wa := contract.User{Channel: contract.ChannelWhatsApp, ID: alice[1:]}
	sms := contract.User{Channel: contract.ChannelSMS, ID: alice[1:]}
	post := func(from, sid string) {
		t.Helper()
		if resp := h.post("/webhook", inboundForm(from, "hi", sid), true); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	post("whatsapp:"+alice, "SMnothingheld")
	for _, u := range []contract.User{wa, sms} {
		if _, err := kv.Put(t.Context(), contract.HeldKey(u), []byte(`{"msgs":[{"seq":1,"body":"the result"}]}`)); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 { // Twilio's retries
		post("whatsapp:"+alice, "SMheld")
	}
	post(alice, "SMsms")
	if err := kv.Delete(t.Context(), contract.HeldKey(wa)); err != nil {
		t.Fatal(err)
	}
	post("whatsapp:"+alice, "SMsent")

	windows := h.stored(contract.StreamEvents, "ts.ev.>")
	if len(windows) != 1 {
		t.Fatalf("stored %d events; want 1 window event", len(windows))
	}
	var ev contract.Event
	if err := contract.Decode(windows[0].Data, &ev); err != nil {
		t.Fatal(err)
	}
	if windows[0].Subject != "ts.ev.whatsapp.15551230001.window" || ev.Kind != contract.KindWindow || ev.User != wa || ev.JobID != "SMheld" {
		t.Errorf("event %+v on %s; want the window of %s, for SMheld", ev, windows[0].Subject, wa)
	}
	var ids []string
	for _, in := range h.inbound() {
		ids = append(ids, in.ID)
	}
	if got, want := strings.Join(ids, " "), "SMnothingheld SMheld SMsms SMsent"; got != want {
		t.Errorf("inbound %s; want every message stored: %s", got, want)
	}
}
