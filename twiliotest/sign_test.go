package twiliotest_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/textslash/textslash/twiliotest"
	"github.com/twilio/twilio-go/client"
)

const token = "0123456789abcdef0123456789abcdef"

// signCases are form posts whose signatures are checked against the twilio
// npm package.
var signCases = []struct {
	name   string
	url    string
	params url.Values
}{
	{"inbound sms", "https://bot.example.com/twilio/sms",
		twiliotest.InboundParams("+15551230000", "+15559870000", "hello", "SM0123456789abcdef0123456789abcdef")},
	{"inbound whatsapp", "https://bot.example.com/twilio/whatsapp",
		twiliotest.InboundParams("whatsapp:+15551230000", "whatsapp:+15559870000", "hi there", "SM0123456789abcdef0123456789abcdef")},
	{"unicode", "https://bot.example.com/hook", url.Values{
		"Body": {"héllo 👋 مرحبا 你好 — \"quotes\" & <tags>\nnew line"}, "ProfileName": {"Zoë"},
	}},
	{"repeated keys", "https://bot.example.com/hook", url.Values{
		"MediaUrl": {"https://b.example/2", "https://a.example/1", "https://b.example/2"}, "Body": {"x"},
	}},
	{"name order", "https://bot.example.com/hook", url.Values{
		"b": {"1"}, "B": {"2"}, "_": {"3"}, "a1": {"4"}, "a": {"5"}, "~": {"6"}, "0": {"7"}, "10": {"8"}, "9": {"9"},
	}},
	// JavaScript sorts by UTF-16 units, twilio-go by bytes: they disagree on
	// U+FF21 against U+1F600. Twilio's own names are ASCII.
	{"non-ASCII names", "https://bot.example.com/hook", url.Values{"Ａ": {"1"}, "😀": {"2"}, "é": {"3"}}},
	{"query string", "https://bot.example.com/hook?tenant=a%20b&x=1&y=%27q%27", url.Values{"Body": {"hi"}}},
	{"empty params", "https://bot.example.com/hook", url.Values{}},
	{"nil params", "https://bot.example.com/hook?only=query", nil},
	{"empty value", "https://bot.example.com/hook", url.Values{"Body": {""}, "NumMedia": {"0"}}},
	{"port 443", "https://bot.example.com:443/hook", url.Values{"Body": {"hi"}}},
	{"http with port", "http://127.0.0.1:8080/hook", url.Values{"Body": {"hi"}}},
}

func TestSignMatchesTwilioNPM(t *testing.T) {
	for _, c := range signCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := twiliotest.Sign(token, c.url, c.params)
			if want := twiliotest.NodeSign(t, token, c.url, c.params); got != want {
				t.Errorf("Sign = %s; twilio npm computes %s", got, want)
			}
			if !twiliotest.NodeValidate(t, token, got, c.url, c.params) {
				t.Errorf("twilio npm validateRequest rejects Sign's %s", got)
			}
		})
	}
}

func TestNodeValidateRejectsTampering(t *testing.T) {
	const u = "https://bot.example.com/hook?tenant=a"
	p := twiliotest.InboundParams("whatsapp:+15551230000", "whatsapp:+15559870000", "hello", "")
	sig := twiliotest.Sign(token, u, p)
	with := func(k, v string) url.Values {
		q := url.Values{}
		for name, vs := range p {
			q[name] = append([]string(nil), vs...)
		}
		q.Set(k, v)
		return q
	}
	cases := []struct {
		name, token, sig, url string
		params                url.Values
		want                  bool
	}{
		{"as signed", token, sig, u, p, true},
		{"port 443 added", token, sig, "https://bot.example.com:443/hook?tenant=a", p, true},
		{"body changed", token, sig, u, with("Body", "hellO"), false},
		{"param added", token, sig, u, with("Extra", "1"), false},
		{"other token", "fedcba9876543210fedcba9876543210", sig, u, p, false},
		{"http", token, sig, "http://bot.example.com/hook?tenant=a", p, false},
		{"query changed", token, sig, "https://bot.example.com/hook?tenant=b", p, false},
		{"signature changed", token, strings.ToLower(sig), u, p, false},
		{"no signature", token, "", u, p, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := twiliotest.NodeValidate(t, c.token, c.sig, c.url, c.params); got != c.want {
				t.Errorf("NodeValidate = %t; want %t", got, c.want)
			}
		})
	}
	// Signed for the URL with :443, valid for the URL without it.
	withPort := twiliotest.Sign(token, "https://bot.example.com:443/hook", p)
	if !twiliotest.NodeValidate(t, token, withPort, "https://bot.example.com/hook", p) {
		t.Error("NodeValidate rejects a signature made for the URL with :443")
	}
}

// TestSignKnownAnswer uses the vector of twilio-go's own tests, so that Sign
// is checked where node is missing too.
func TestSignKnownAnswer(t *testing.T) {
	p := url.Values{
		"Digits": {"1234"}, "CallSid": {"CA1234567890ABCDE"}, "To": {"+18005551212"},
		"Caller": {"+14158675309"}, "From": {"+14158675309"},
		"ReasonConferenceEnded": {"test"}, "Reason": {"Participant"},
	}
	got := twiliotest.Sign("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", p)
	if want := "vOEb5UThFn24KEfnOFLQY2AE5FY="; got != want {
		t.Errorf("Sign = %s; want %s", got, want)
	}
}

// TestSignMatchesTwilioGo checks Sign against the validator the services
// use, for the single-valued cases (twilio-go reads only a repeated key's
// first value).
func TestSignMatchesTwilioGo(t *testing.T) {
	rv := client.NewRequestValidator(token)
	for _, c := range signCases {
		if c.name == "repeated keys" || c.name == "non-ASCII names" {
			continue
		}
		single := map[string]string{}
		for k := range c.params {
			single[k] = c.params.Get(k)
		}
		if sig := twiliotest.Sign(token, c.url, c.params); !rv.Validate(c.url, single, sig) {
			t.Errorf("%s: twilio-go rejects Sign's %s", c.name, sig)
		}
	}
}

func TestSignedRequest(t *testing.T) {
	const public = "https://bot.example.com/twilio?tenant=1"
	type got struct {
		valid       bool
		contentType string
		form        url.Values
	}
	received := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		_ = r.ParseForm()
		params := map[string]string{}
		for k := range r.PostForm {
			params[k] = r.PostForm.Get(k)
		}
		rv := client.NewRequestValidator(token)
		received <- got{
			valid:       rv.Validate(public, params, r.Header.Get("X-Twilio-Signature")),
			contentType: r.Header.Get("Content-Type"),
			form:        r.PostForm,
		}
		w.Header().Set("Content-Type", "text/xml")
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Response/>`)
	}))
	defer srv.Close()

	p := twiliotest.InboundParams("whatsapp:+15551230000", "whatsapp:+15559870000", "run the tests", "")
	twiliotest.AddInboundMedia(p, "https://api.example/media/1", "image/jpeg")
	resp, err := http.DefaultClient.Do(twiliotest.SignedRequest(token, public, srv.URL+"/twilio", p))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	g := <-received
	if !g.valid {
		t.Error("twilio-go's RequestValidator rejects the signature")
	}
	if g.contentType != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type = %q; want application/x-www-form-urlencoded", g.contentType)
	}
	for k, want := range map[string]string{
		"From": "whatsapp:+15551230000", "To": "whatsapp:+15559870000", "Body": "run the tests",
		"WaId": "15551230000", "NumMedia": "1", "MediaUrl0": "https://api.example/media/1",
		"MediaContentType0": "image/jpeg", "MessageType": "image", "AccountSid": twiliotest.ExampleAccountSID,
	} {
		if got := g.form.Get(k); got != want {
			t.Errorf("%s = %q; want %q", k, got, want)
		}
	}
	if sid := g.form.Get("MessageSid"); len(sid) != 34 || !strings.HasPrefix(sid, "SM") || g.form.Get("SmsMessageSid") != sid {
		t.Errorf("MessageSid = %q, SmsMessageSid = %q; want the same SM… SID", sid, g.form.Get("SmsMessageSid"))
	}
}

func TestInboundParamsSMS(t *testing.T) {
	p := twiliotest.InboundParams("+15551230000", "+15559870000", strings.Repeat("a", 161), "SMx")
	for _, k := range []string{"WaId", "ProfileName", "MessageType"} {
		if p.Has(k) {
			t.Errorf("SMS params have %s=%q; WhatsApp only", k, p.Get(k))
		}
	}
	if got := p.Get("NumSegments"); got != "2" {
		t.Errorf("NumSegments for 161 characters = %s; want 2", got)
	}
	if got := p.Get("MessageSid"); got != "SMx" {
		t.Errorf("MessageSid = %s; want SMx", got)
	}
}
