// Package twiliotest stands in for Twilio in tests, the way net/http/httptest
// stands in for a web server. It is imported by tests only.
//
// Webhooks in: Sign computes X-Twilio-Signature, SignedRequest builds a signed
// form POST, InboundParams a realistic inbound message. NodeSign and
// NodeValidate ask the official twilio npm package, to keep Sign honest.
//
//	p := twiliotest.InboundParams("whatsapp:+15551230000", "whatsapp:+15559870000", "hi", "")
//	req := twiliotest.SignedRequest(token, "https://bot.example/twilio", srv.URL+"/twilio", p)
//
// Messages out: NewAPI is a fake Twilio REST API that records messages,
// fails on demand (or, CloseWindow, as WhatsApp does outside a person's
// 24-hour window), serves media and sends signed status callbacks; StartPrism
// runs Stoplight Prism on Twilio's own OpenAPI description of the Messages
// create operation, to check requests against the contract. RedirectClient
// points twilio-go's client at either.
//
//	api := twiliotest.NewAPI(t)
//	// ... the code under test sends with api.URL, api.AccountSID, api.AuthToken
//	msgs := api.WaitMessages(t, 1, 5*time.Second)
package twiliotest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/textslash/textslash/natstest"
)

// Sign is the X-Twilio-Signature Twilio sends with a form POST to fullURL
// (the public URL Twilio called, query string included): base64 of the
// HMAC-SHA1, keyed with authToken, of fullURL followed by each parameter's
// name and value, parameters sorted by name. A repeated name contributes
// each of its distinct values, sorted, as the twilio npm package computes
// it; names and values are sorted by UTF-16 code units, as JavaScript sorts.
func Sign(authToken, fullURL string, params url.Values) string {
	var b strings.Builder
	b.WriteString(fullURL)
	for _, name := range slices.SortedFunc(maps.Keys(params), compareUTF16) {
		values := slices.Clone(params[name])
		slices.SortFunc(values, compareUTF16)
		for _, v := range slices.Compact(values) {
			b.WriteString(name)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// compareUTF16 orders strings the way JavaScript's default sort does: by
// UTF-16 code units. It differs from Go's byte order only between
// characters above U+FFFF and those in U+E000–U+FFFF.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// SignedRequest builds the form POST Twilio would send to publicURL with
// params, addressed to postURL (where the test's server really listens) and
// signed for publicURL. It panics if postURL is not a valid URL.
func SignedRequest(authToken, publicURL, postURL string, params url.Values) *http.Request {
	req, err := http.NewRequest(http.MethodPost, postURL, strings.NewReader(params.Encode()))
	if err != nil {
		panic("twiliotest: SignedRequest: " + err.Error())
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", Sign(authToken, publicURL, params))
	req.Header.Set("User-Agent", "TwilioProxy/1.1")
	req.Header.Set("I-Twilio-Idempotency-Token", newID(""))
	return req
}

// ExampleAccountSID is the AccountSid of InboundParams.
const ExampleAccountSID = "AC0123456789abcdef0123456789abcdef"

// InboundParams is the form Twilio posts to a messaging webhook when from
// sends body to to: MessageSid (sid, or a new "SM…" when sid is empty),
// SmsMessageSid, SmsSid, SmsStatus, AccountSid (ExampleAccountSID: set it to
// your own when the receiver checks it), From, To, Body, NumMedia "0",
// NumSegments and ApiVersion. A WhatsApp sender ("whatsapp:+…") adds
// ProfileName, WaId, MessageType and ReferralNumMedia. Add media with
// AddInboundMedia.
func InboundParams(from, to, body, sid string) url.Values {
	if sid == "" {
		sid = newID("SM")
	}
	p := url.Values{
		"MessageSid":    {sid},
		"SmsMessageSid": {sid},
		"SmsSid":        {sid},
		"SmsStatus":     {"received"},
		"AccountSid":    {ExampleAccountSID},
		"From":          {from},
		"To":            {to},
		"Body":          {body},
		"NumMedia":      {"0"},
		"NumSegments":   {strconv.Itoa(segments(body))},
		"ApiVersion":    {"2010-04-01"},
	}
	if number, ok := strings.CutPrefix(from, "whatsapp:"); ok {
		p.Set("ProfileName", "Twiliotest User")
		p.Set("WaId", strings.TrimPrefix(number, "+"))
		p.Set("MessageType", "text")
		p.Set("ReferralNumMedia", "0")
	}
	return p
}

// AddInboundMedia adds one attachment to inbound params: MediaUrl{N} and
// MediaContentType{N}, N counting from 0, and NumMedia. On WhatsApp it also
// sets MessageType (image, video, audio or document) as Twilio does.
func AddInboundMedia(params url.Values, mediaURL, contentType string) {
	n, _ := strconv.Atoi(params.Get("NumMedia"))
	params.Set("MediaUrl"+strconv.Itoa(n), mediaURL)
	params.Set("MediaContentType"+strconv.Itoa(n), contentType)
	params.Set("NumMedia", strconv.Itoa(n+1))
	if params.Has("WaId") {
		kind, _, _ := strings.Cut(contentType, "/")
		switch kind {
		case "image", "video", "audio":
			params.Set("MessageType", kind)
		default:
			params.Set("MessageType", "document")
		}
	}
}

// segments approximates how many SMS segments body takes: 160 characters
// (153 per part when split) if it is plain ASCII, standing in for GSM-7,
// and 70 UTF-16 units (67 per part) otherwise.
func segments(body string) int {
	n, single, part := len(body), 160, 153
	for _, r := range body {
		if r > 0x7e || (r < 0x20 && r != '\n' && r != '\r') {
			n, single, part = len(utf16.Encode([]rune(body))), 70, 67
			break
		}
	}
	if n <= single {
		return 1
	}
	return (n + part - 1) / part
}

// RedirectClient is an *http.Client that sends every request to baseURL's
// scheme and host, keeping path and query: twilio-go has no base-URL
// option, so give it this as its client's HTTPClient. It panics if baseURL
// is not an absolute URL.
//
//	c := &client.Client{Credentials: client.NewCredentials(api.AccountSID, api.AuthToken),
//		HTTPClient: twiliotest.RedirectClient(api.URL)}
//	c.SetAccountSid(api.AccountSID)
//	rest := twilio.NewRestClientWithParams(twilio.ClientParams{Client: c})
func RedirectClient(baseURL string) *http.Client {
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		panic(fmt.Sprintf("twiliotest: RedirectClient(%q): not an absolute URL", baseURL))
	}
	return &http.Client{Transport: redirect{scheme: u.Scheme, host: u.Host}}
}

type redirect struct{ scheme, host string }

func (rd redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rd.scheme, rd.host, ""
	return http.DefaultTransport.RoundTrip(r)
}

// newID is prefix and 32 random hex digits, the shape of a Twilio SID.
func newID(prefix string) string {
	b := make([]byte, 16)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// nodeModules is the directory holding the npm tools:
// $TEXTSLASH_TEST_NODE_MODULES, else testdata/npm/node_modules under the
// repository root.
func nodeModules(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv("TEXTSLASH_TEST_NODE_MODULES"); dir != "" {
		return dir
	}
	root, err := natstest.RepoRoot()
	if err != nil {
		natstest.Missing(t, "node_modules: %v", err)
	}
	return filepath.Join(root, "testdata", "npm", "node_modules")
}
