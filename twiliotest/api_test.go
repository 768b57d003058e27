package twiliotest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/twiliotest"
	"github.com/twilio/twilio-go"
	"github.com/twilio/twilio-go/client"
	api "github.com/twilio/twilio-go/rest/api/v2010"
)

// restClient is twilio-go's client sending to base with the credentials.
func restClient(base, sid, token string) *twilio.RestClient {
	c := &client.Client{
		Credentials: client.NewCredentials(sid, token),
		HTTPClient:  twiliotest.RedirectClient(base),
	}
	c.SetAccountSid(sid)
	return twilio.NewRestClientWithParams(twilio.ClientParams{Client: c})
}

func newClient(a *twiliotest.API) *twilio.RestClient {
	return restClient(a.URL, a.AccountSID, a.AuthToken)
}

// restError is err as twilio-go's error, or fails the test.
func restError(t *testing.T, err error) *client.TwilioRestError {
	t.Helper()
	var re *client.TwilioRestError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T); want a *client.TwilioRestError", err, err)
	}
	return re
}

func TestAPICreateMessage(t *testing.T) {
	a := twiliotest.NewAPI(t, twiliotest.WithoutCallbacks())
	media := []string{"https://files.example/a.png", "https://files.example/b.jpg"}
	p := &api.CreateMessageParams{}
	p.SetTo("+15559870000").SetFrom("+15551230000").SetBody("héllo 👋").
		SetMediaUrl(media).SetStatusCallback("https://bot.example/status")
	m, err := newClient(a).Api.CreateMessage(p)
	if err != nil {
		t.Fatalf("CreateMessage: %v", err)
	}
	if m.Sid == nil || len(*m.Sid) != 34 || !strings.HasPrefix(*m.Sid, "SM") {
		t.Fatalf("sid = %v; want SM and 32 hex digits", m.Sid)
	}
	for name, c := range map[string][2]*string{
		"status": {m.Status, ptr("queued")}, "to": {m.To, ptr("+15559870000")},
		"from": {m.From, ptr("+15551230000")}, "body": {m.Body, ptr("héllo 👋")},
		"num_media": {m.NumMedia, ptr("2")}, "account_sid": {m.AccountSid, &a.AccountSID},
		"direction": {m.Direction, ptr("outbound-api")}, "num_segments": {m.NumSegments, ptr("1")},
	} {
		if c[0] == nil || *c[0] != *c[1] {
			t.Errorf("%s = %v; want %q", name, deref(c[0]), *c[1])
		}
	}
	if m.DateCreated == nil {
		t.Error("date_created missing")
	} else if _, err := time.Parse(time.RFC1123Z, *m.DateCreated); err != nil {
		t.Errorf("date_created %q: %v", *m.DateCreated, err)
	}

	msgs := a.Messages()
	if len(msgs) != 1 {
		t.Fatalf("Messages() has %d; want 1", len(msgs))
	}
	got := msgs[0]
	if got.SID != *m.Sid || got.To != "+15559870000" || got.From != "+15551230000" ||
		got.Body != "héllo 👋" || got.StatusCallback != "https://bot.example/status" ||
		!slices.Equal(got.MediaURLs, media) || got.At.IsZero() {
		t.Errorf("recorded %+v; want what was sent", got)
	}
	if n := a.Attempts(); n != 1 {
		t.Errorf("Attempts() = %d; want 1", n)
	}
}

func TestAPIMessagingService(t *testing.T) {
	a := twiliotest.NewAPI(t)
	p := &api.CreateMessageParams{}
	p.SetTo("whatsapp:+15559870000").SetMessagingServiceSid("MG0123456789abcdef0123456789abcdef").SetBody("hi")
	m, err := newClient(a).Api.CreateMessage(p)
	if err != nil {
		t.Fatalf("CreateMessage: %v", err)
	}
	if *m.Status != "accepted" || m.From != nil || *m.MessagingServiceSid != "MG0123456789abcdef0123456789abcdef" {
		t.Errorf("status %q, from %v, messaging_service_sid %v; want accepted, null, the MG…",
			*m.Status, deref(m.From), deref(m.MessagingServiceSid))
	}
	if got := a.Messages()[0].MessagingServiceSID; got != "MG0123456789abcdef0123456789abcdef" {
		t.Errorf("MessagingServiceSID = %q", got)
	}
}

func TestAPIAuth(t *testing.T) {
	a := twiliotest.NewAPI(t)
	p := (&api.CreateMessageParams{}).SetTo("+15559870000").SetFrom("+15551230000").SetBody("hi")
	for name, c := range map[string]*twilio.RestClient{
		"wrong token":   restClient(a.URL, a.AccountSID, "0000"+a.AuthToken[4:]),
		"other account": restClient(a.URL, "AC0123456789abcdef0123456789abcdef", a.AuthToken),
	} {
		_, err := c.Api.CreateMessage(p)
		if re := restError(t, err); re.Status != 401 || re.Code != twiliotest.CodeAuthenticate {
			t.Errorf("%s: status %d code %d; want 401 %d", name, re.Status, re.Code, twiliotest.CodeAuthenticate)
		}
	}
	resp, err := http.PostForm(a.URL+"/2010-04-01/Accounts/"+a.AccountSID+"/Messages.json",
		url.Values{"To": {"+15559870000"}, "From": {"+15551230000"}, "Body": {"hi"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("no auth: %s, WWW-Authenticate %q; want 401 and a challenge", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	if n, m := a.Attempts(), len(a.Messages()); n != 3 || m != 0 {
		t.Errorf("Attempts() = %d, Messages() has %d; want 3, 0", n, m)
	}
}

// templateSID is a content the tests' fakes hold (addTemplate).
const templateSID = "HX0123456789abcdef0123456789abcdef"

// addTemplate gives a the content templateSID, a twilio/text "Hello {{1}}".
func addTemplate(a *twiliotest.API) {
	a.AddContent(twiliotest.Content{SID: templateSID, FriendlyName: "hello", Language: "en",
		Variables: map[string]string{"1": "there"}, Types: map[string]json.RawMessage{"twilio/text": json.RawMessage(`{"body":"Hello {{1}}"}`)}})
}

func TestAPIValidation(t *testing.T) {
	a := twiliotest.NewAPI(t)
	addTemplate(a)
	c := newClient(a)
	urls := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, "https://files.example/"+string(rune('a'+i))+".png")
		}
		return out
	}
	cases := []struct {
		name  string
		build func(p *api.CreateMessageParams)
		code  int // 0: accepted
	}{
		{"sms", func(p *api.CreateMessageParams) { p.SetTo("+1555").SetFrom("+1444").SetBody("hi") }, 0},
		{"no To", func(p *api.CreateMessageParams) { p.SetFrom("+1444").SetBody("hi") }, twiliotest.CodeToRequired},
		{"no From", func(p *api.CreateMessageParams) { p.SetTo("+1555").SetBody("hi") }, twiliotest.CodeFromRequired},
		{"no Body", func(p *api.CreateMessageParams) { p.SetTo("+1555").SetFrom("+1444") }, twiliotest.CodeBodyOrMedia},
		{"media only", func(p *api.CreateMessageParams) { p.SetTo("+1555").SetFrom("+1444").SetMediaUrl(urls(1)) }, 0},
		{"template", func(p *api.CreateMessageParams) {
			p.SetTo("whatsapp:+1555").SetFrom("whatsapp:+1444").SetContentSid(templateSID)
		}, 0},
		{"unknown template", func(p *api.CreateMessageParams) {
			p.SetTo("whatsapp:+1555").SetFrom("whatsapp:+1444").SetContentSid("HXffffffffffffffffffffffffffffffff")
		}, twiliotest.CodeContentSid},
		{"template variables not JSON", func(p *api.CreateMessageParams) {
			p.SetTo("whatsapp:+1555").SetFrom("whatsapp:+1444").SetContentSid(templateSID).SetContentVariables("1=you")
		}, twiliotest.CodeContentVariables},
		{"1600 characters", func(p *api.CreateMessageParams) {
			p.SetTo("+1555").SetFrom("+1444").SetBody(strings.Repeat("é", 1600))
		}, 0},
		{"1601 characters", func(p *api.CreateMessageParams) {
			p.SetTo("+1555").SetFrom("+1444").SetBody(strings.Repeat("a", 1601))
		}, twiliotest.CodeBodyTooLong},
		{"10 media", func(p *api.CreateMessageParams) { p.SetTo("+1555").SetFrom("+1444").SetMediaUrl(urls(10)) }, 0},
		{"11 media", func(p *api.CreateMessageParams) {
			p.SetTo("+1555").SetFrom("+1444").SetMediaUrl(urls(11))
		}, twiliotest.CodeTooManyMedia},
		{"whatsapp 1 media", func(p *api.CreateMessageParams) {
			p.SetTo("whatsapp:+1555").SetFrom("whatsapp:+1444").SetMediaUrl(urls(1))
		}, 0},
		{"whatsapp 2 media", func(p *api.CreateMessageParams) {
			p.SetTo("whatsapp:+1555").SetFrom("whatsapp:+1444").SetBody("two").SetMediaUrl(urls(2))
		}, twiliotest.CodeTooManyMedia},
		{"channel mismatch", func(p *api.CreateMessageParams) {
			p.SetTo("whatsapp:+1555").SetFrom("+1444").SetBody("hi")
		}, twiliotest.CodeChannelMismatch},
	}
	accepted := 0
	for _, tc := range cases {
		p := &api.CreateMessageParams{}
		tc.build(p)
		_, err := c.Api.CreateMessage(p)
		if tc.code == 0 {
			accepted++
			if err != nil {
				t.Errorf("%s: %v; want accepted", tc.name, err)
			}
			continue
		}
		if re := restError(t, err); re.Status != 400 || re.Code != tc.code || re.Message == "" ||
			re.MoreInfo != "https://www.twilio.com/docs/errors/"+strconv.Itoa(tc.code) {
			t.Errorf("%s: %+v; want status 400, code %d, a message and more_info", tc.name, re, tc.code)
		}
	}
	if n, m := a.Attempts(), len(a.Messages()); n != len(cases) || m != accepted {
		t.Errorf("Attempts() = %d, Messages() has %d; want %d, %d", n, m, len(cases), accepted)
	}
}

func TestAPIProgrammedFailures(t *testing.T) {
	a := twiliotest.NewAPI(t)
	c := newClient(a)
	send := func(to string) error {
		_, err := c.Api.CreateMessage((&api.CreateMessageParams{}).SetTo(to).SetFrom("whatsapp:+1444").SetBody("hi"))
		return err
	}
	a.FailNext(2, 429, twiliotest.CodeTooManyRequests)
	a.FailTo("whatsapp:+1666", 400, twiliotest.CodeOutsideWindow)
	for i := range 2 {
		if re := restError(t, send("whatsapp:+1555")); re.Status != 429 || re.Code != twiliotest.CodeTooManyRequests {
			t.Errorf("send %d: %d %d; want 429 %d", i, re.Status, re.Code, twiliotest.CodeTooManyRequests)
		}
	}
	if err := send("whatsapp:+1555"); err != nil {
		t.Errorf("third send: %v; want accepted", err)
	}
	for range 2 {
		if re := restError(t, send("whatsapp:+1666")); re.Status != 400 || re.Code != twiliotest.CodeOutsideWindow {
			t.Errorf("to +1666: %d %d; want 400 %d", re.Status, re.Code, twiliotest.CodeOutsideWindow)
		}
	}
	if n, m := a.Attempts(), len(a.Messages()); n != 5 || m != 1 {
		t.Errorf("Attempts() = %d, Messages() has %d; want 5, 1", n, m)
	}
}

// callbackSink records status callbacks after checking their signature
// with twilio-go's validator.
type callbackSink struct {
	t   *testing.T
	srv *httptest.Server

	mu  sync.Mutex
	got []url.Values
}

func newCallbackSink(t *testing.T, token string) *callbackSink {
	s := &callbackSink{t: t}
	rv := client.NewRequestValidator(token)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		params := map[string]string{}
		for k := range r.PostForm {
			params[k] = r.PostForm.Get(k)
		}
		if !rv.Validate(s.srv.URL+r.URL.RequestURI(), params, r.Header.Get("X-Twilio-Signature")) {
			t.Errorf("status callback %v: bad signature", r.PostForm)
			w.WriteHeader(http.StatusForbidden)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, r.PostForm)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// wait returns the callbacks once there are n.
func (s *callbackSink) wait(n int) []url.Values {
	s.t.Helper()
	var got []url.Values
	natstest.CheckFor(s.t, 5*time.Second, 5*time.Millisecond, func() error {
		s.mu.Lock()
		got = slices.Clone(s.got)
		s.mu.Unlock()
		if len(got) < n {
			return fmt.Errorf("%d status callbacks; want %d: %v", len(got), n, got)
		}
		return nil
	})
	return got
}

func TestAPIStatusCallbacks(t *testing.T) {
	a := twiliotest.NewAPI(t, twiliotest.WithCallbackDelay(time.Millisecond))
	sink := newCallbackSink(t, a.AuthToken)
	a.FailDelivery("+1666", "undelivered", twiliotest.CodeUnreachable)
	a.FailDelivery("+1777", "failed", twiliotest.CodeUnknownRecipient)
	c := newClient(a)
	sids := map[string]string{}
	for _, to := range []string{"+1555", "+1666", "+1777"} {
		m, err := c.Api.CreateMessage((&api.CreateMessageParams{}).SetTo(to).SetFrom("+1444").SetBody("hi").
			SetStatusCallback(sink.srv.URL + "/status?to=" + url.QueryEscape(to)))
		if err != nil {
			t.Fatal(err)
		}
		sids[to] = *m.Sid
	}
	got := sink.wait(5)
	want := map[string][]string{
		"+1555": {"sent", "delivered"},
		"+1666": {"sent", "undelivered 30003"},
		"+1777": {"failed 30005"},
	}
	statuses := map[string][]string{}
	for _, cb := range got {
		to := cb.Get("To")
		if cb.Get("MessageSid") != sids[to] || cb.Get("AccountSid") != a.AccountSID || cb.Get("From") != "+1444" {
			t.Errorf("callback %v; want MessageSid %s, AccountSid %s, From +1444", cb, sids[to], a.AccountSID)
		}
		s := cb.Get("MessageStatus")
		if cb.Has("ErrorCode") {
			s += " " + cb.Get("ErrorCode")
		}
		statuses[to] = append(statuses[to], s)
	}
	for to, w := range want {
		if !slices.Equal(statuses[to], w) {
			t.Errorf("callbacks for %s: %v; want %v", to, statuses[to], w)
		}
	}
	// The fake records a callback once its POST returned, just after the
	// sink saw it.
	natstest.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if n := len(a.Callbacks()); n < 5 {
			return fmt.Errorf("Callbacks() has %d; want 5", n)
		}
		return nil
	})
	if n := len(a.Callbacks()); n != 5 {
		t.Errorf("Callbacks() has %d; want 5", n)
	}
	for _, cb := range a.Callbacks() {
		if cb.StatusCode != http.StatusNoContent || cb.Err != nil {
			t.Errorf("callback %+v; want answered 204", cb)
		}
	}
}

func TestAPIMedia(t *testing.T) {
	a := twiliotest.NewAPI(t)
	data := []byte("\xff\xd8\xff\xe0 not really a jpeg")
	u := a.AddMedia("image/jpeg", data)
	prefix := a.URL + "/2010-04-01/Accounts/" + a.AccountSID + "/Messages/MM"
	if !strings.HasPrefix(u, prefix) || !strings.Contains(u, "/Media/ME") {
		t.Errorf("AddMedia = %s; want %s…/Media/ME…", u, prefix)
	}
	get := func(u, user, pass string) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := get(u, a.AccountSID, a.AuthToken)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/jpeg" || string(b) != string(data) {
		t.Errorf("GET: %s %q %q; want 200 image/jpeg and the data", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	if resp, _ := get(u, "", ""); resp.StatusCode != 401 {
		t.Errorf("GET without auth: %s; want 401", resp.Status)
	}
	if resp, _ := get(u, a.AccountSID, "wrong"); resp.StatusCode != 401 {
		t.Errorf("GET with a wrong token: %s; want 401", resp.Status)
	}
	if resp, _ := get(u+"x", a.AccountSID, a.AuthToken); resp.StatusCode != 404 {
		t.Errorf("GET of unknown media: %s; want 404", resp.Status)
	}
}

// fatalTB records Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestAPIWaitMessages(t *testing.T) {
	a := twiliotest.NewAPI(t)
	c := newClient(a)
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, _ = c.Api.CreateMessage((&api.CreateMessageParams{}).SetTo("+1555").SetFrom("+1444").SetBody("late"))
	}()
	if msgs := a.WaitMessages(t, 1, 5*time.Second); len(msgs) != 1 || msgs[0].Body != "late" {
		t.Errorf("WaitMessages = %+v; want the late message", msgs)
	}

	// On timeout it fails with every request received.
	a.FailNext(1, 500, 20500)
	_, _ = c.Api.CreateMessage((&api.CreateMessageParams{}).SetTo("+1999").SetFrom("+1444").SetBody("refused"))
	ft := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.WaitMessages(ft, 2, 20*time.Millisecond)
	}()
	<-done
	for _, want := range []string{"1 messages accepted", "want 2", `to="+1999"`, `body="refused"`, "500 code 20500", `body="late"`} {
		if !strings.Contains(ft.msg, want) {
			t.Errorf("WaitMessages failed with %q; want it to contain %q", ft.msg, want)
		}
	}
}

func ptr(s string) *string { return &s }

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

// Outside a WhatsApp person's window a free-form message is accepted and
// then fails with 63016 in its status callback; an approved template goes
// through, a content that is not approved does not; OpenWindow lets
// free-form messages through again. FailTo(to, 0, 0) ends FailTo.
func TestAPIWindow(t *testing.T) {
	a := twiliotest.NewAPI(t, twiliotest.WithCallbackDelay(time.Millisecond))
	sink := newCallbackSink(t, a.AuthToken)
	c := newClient(a)
	text := json.RawMessage(`{"body":"Your task finished. Reply to see the result."}`)
	approved := a.AddContent(twiliotest.Content{FriendlyName: "window", Language: "en", Approved: true,
		Types: map[string]json.RawMessage{"twilio/text": text}})
	unapproved := a.AddContent(twiliotest.Content{FriendlyName: "draft", Language: "en",
		Types: map[string]json.RawMessage{"twilio/text": text}})
	const to = "whatsapp:+1666"
	send := func(body, contentSid string) {
		t.Helper()
		p := (&api.CreateMessageParams{}).SetTo(to).SetFrom("whatsapp:+1444").SetStatusCallback(sink.srv.URL + "/status")
		if contentSid != "" {
			p.SetContentSid(contentSid)
		} else {
			p.SetBody(body)
		}
		if _, err := c.Api.CreateMessage(p); err != nil {
			t.Fatalf("create %q %s: %v; want accepted", body, contentSid, err)
		}
	}
	a.CloseWindow(to)
	send("free-form", "")
	send("", approved.SID)
	send("", unapproved.SID)
	a.OpenWindow(to) // the fate of a message is decided when it is created
	send("after", "")
	got := sink.wait(1 + 2 + 1 + 2)
	bySid := map[string][]string{}
	for _, cb := range got {
		s := cb.Get("MessageStatus")
		if cb.Has("ErrorCode") {
			s += " " + cb.Get("ErrorCode")
		}
		bySid[cb.Get("MessageSid")] = append(bySid[cb.Get("MessageSid")], s)
	}
	want := [][]string{{"failed 63016"}, {"sent", "delivered"}, {"failed 63016"}, {"sent", "delivered"}}
	for i, m := range a.Messages() {
		if !slices.Equal(bySid[m.SID], want[i]) {
			t.Errorf("message %d (%q, content %s): callbacks %v; want %v", i+1, m.Body, m.ContentSID, bySid[m.SID], want[i])
		}
	}

	a.FailTo(to, 400, twiliotest.CodeOutsideWindow)
	if _, err := c.Api.CreateMessage((&api.CreateMessageParams{}).SetTo(to).SetFrom("whatsapp:+1444").SetBody("refused")); err == nil {
		t.Errorf("FailTo: accepted; want refused")
	}
	a.FailTo(to, 0, 0)
	if _, err := c.Api.CreateMessage((&api.CreateMessageParams{}).SetTo(to).SetFrom("whatsapp:+1444").SetBody("again")); err != nil {
		t.Errorf("after FailTo(to, 0, 0): %v; want accepted", err)
	}
}
