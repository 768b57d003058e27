package twiliotest_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/twiliotest"
	api "github.com/twilio/twilio-go/rest/api/v2010"
)

const (
	prismSID   = "AC0123456789abcdef0123456789abcdef"
	prismToken = "prismtoken"
)

// post sends form to the Messages create path of base, with basic auth
// unless sid is empty, and returns the status and the decoded JSON body.
func post(t *testing.T, base, sid, token string, form url.Values) (int, map[string]any) {
	t.Helper()
	account := sid
	if account == "" {
		account = prismSID
	}
	req, err := http.NewRequest(http.MethodPost, base+"/2010-04-01/Accounts/"+account+"/Messages.json",
		strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sid != "" {
		req.SetBasicAuth(sid, token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("POST %v: %s, body %q: %v", form, resp.Status, b, err)
	}
	return resp.StatusCode, body
}

// createForms are create requests with the status Twilio's contract (Prism)
// and the fake answer.
var createForms = []struct {
	name        string
	form        url.Values
	prism, fake int
}{
	{"sms", url.Values{"To": {"+15559870000"}, "From": {"+15551230000"}, "Body": {"hi"},
		"StatusCallback": {"https://bot.example/status"}}, 201, 201},
	{"whatsapp media", url.Values{"To": {"whatsapp:+15559870000"}, "From": {"whatsapp:+15551230000"},
		"Body": {"a picture"}, "MediaUrl": {"https://files.example/a.png"}}, 201, 201},
	{"mms media", url.Values{"To": {"+15559870000"}, "From": {"+15551230000"},
		"MediaUrl": {"https://files.example/a.png", "https://files.example/b.png"}}, 201, 201},
	{"messaging service", url.Values{"To": {"+15559870000"},
		"MessagingServiceSid": {"MG0123456789abcdef0123456789abcdef"}, "Body": {"hi"}}, 201, 201},
	{"template", url.Values{"To": {"whatsapp:+15559870000"}, "From": {"whatsapp:+15551230000"},
		"ContentSid": {templateSID}}, 201, 201},
	{"template with variables", url.Values{"To": {"whatsapp:+15559870000"}, "From": {"whatsapp:+15551230000"},
		"ContentSid": {templateSID}, "ContentVariables": {`{"1":"Alice"}`}}, 201, 201},
	{"no To", url.Values{"From": {"+15551230000"}, "Body": {"hi"}}, 422, 400},
	{"no From", url.Values{"To": {"+15559870000"}, "Body": {"hi"}}, 422, 400},
	{"no Body", url.Values{"To": {"+15559870000"}, "From": {"+15551230000"}}, 422, 400},
	// Limits Twilio enforces beyond its OpenAPI description.
	{"1601 characters", url.Values{"To": {"+15559870000"}, "From": {"+15551230000"},
		"Body": {strings.Repeat("a", 1601)}}, 201, 400},
	{"whatsapp 2 media", url.Values{"To": {"whatsapp:+15559870000"}, "From": {"whatsapp:+15551230000"},
		"MediaUrl": {"https://files.example/a.png", "https://files.example/b.png"}}, 201, 400},
	{"a content the account does not have", url.Values{"To": {"whatsapp:+15559870000"}, "From": {"whatsapp:+15551230000"},
		"ContentSid": {"HXffffffffffffffffffffffffffffffff"}}, 201, 400},
}

// TestPrism starts Prism once and checks it, twilio-go and the fake
// against each other.
func TestPrism(t *testing.T) {
	start := time.Now()
	base := twiliotest.StartPrism(t)
	t.Logf("StartPrism took %s", time.Since(start).Round(time.Millisecond))

	t.Run("auth", func(t *testing.T) {
		status, body := post(t, base, "", "", createForms[0].form)
		if status != 401 {
			t.Errorf("no basic auth: %d %v; want 401", status, body)
		}
	})

	t.Run("contract", func(t *testing.T) {
		fake := twiliotest.NewAPI(t, twiliotest.WithoutCallbacks())
		addTemplate(fake)
		for _, c := range createForms {
			status, body := post(t, base, prismSID, prismToken, c.form)
			if status != c.prism {
				t.Errorf("%s: prism answers %d %v; want %d", c.name, status, body, c.prism)
			}
			if status == 422 && body["validation"] == nil {
				t.Errorf("%s: prism's 422 has no validation list: %v", c.name, body)
			}
			if status, body := post(t, fake.URL, fake.AccountSID, fake.AuthToken, c.form); status != c.fake {
				t.Errorf("%s: the fake answers %d %v; want %d", c.name, status, body, c.fake)
			}
		}
	})

	t.Run("resource shape", func(t *testing.T) {
		fake := twiliotest.NewAPI(t, twiliotest.WithoutCallbacks())
		_, want := post(t, base, prismSID, prismToken, createForms[0].form)
		_, got := post(t, fake.URL, fake.AccountSID, fake.AuthToken, createForms[0].form)
		wantKeys, gotKeys := slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(got))
		if !slices.Equal(gotKeys, wantKeys) {
			t.Errorf("the fake's Message has fields\n%v\nTwilio's example has\n%v", gotKeys, wantKeys)
		}
		for k, v := range want {
			if w, g := jsonKind(v), jsonKind(got[k]); w != g && w != "null" && g != "null" {
				t.Errorf("%s: the fake's is a %s (%v); Twilio's example a %s (%v)", k, g, got[k], w, v)
			}
		}
	})

	t.Run("twilio-go", func(t *testing.T) {
		c := restClient(base, prismSID, prismToken)
		m, err := c.Api.CreateMessage((&api.CreateMessageParams{}).SetTo("whatsapp:+15559870000").
			SetFrom("whatsapp:+15551230000").SetBody("hi").SetMediaUrl([]string{"https://files.example/a.png"}))
		if err != nil {
			t.Fatalf("CreateMessage: %v", err)
		}
		if m.Sid == nil || !strings.HasPrefix(*m.Sid, "SM") {
			t.Errorf("sid = %v; want SM…", deref(m.Sid))
		}
		_, err = c.Api.CreateMessage((&api.CreateMessageParams{}).SetTo("+15559870000").SetBody("no sender"))
		if re := restError(t, err); re.Status != 422 {
			t.Errorf("invalid create: status %d; want 422", re.Status)
		}
	})
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	default:
		return "bool"
	}
}
