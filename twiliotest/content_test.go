package twiliotest_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/textslash/textslash/twiliotest"
	api "github.com/twilio/twilio-go/rest/api/v2010"
	content "github.com/twilio/twilio-go/rest/content/v1"
	messaging "github.com/twilio/twilio-go/rest/messaging/v2"
)

// quickReply is a content create request for a quick reply with buttons.
func quickReply(name, body string, titles ...string) *content.CreateContentParams {
	var actions []content.QuickReplyAction
	for _, title := range titles {
		actions = append(actions, content.QuickReplyAction{Title: title, Id: strings.ToLower(title)})
	}
	return (&content.CreateContentParams{}).SetContentCreateRequest(content.ContentCreateRequest{
		FriendlyName: name, Language: "en", Variables: map[string]string{"1": "a question"},
		Types: content.Types{TwilioQuickReply: &content.TwilioQuickReply{Body: body, Actions: actions}},
	})
}

// twilio-go creates contents at the fake and lists them back across pages;
// a message sent with one records the content, its variables and the body
// they make.
func TestAPIContent(t *testing.T) {
	a := twiliotest.NewAPI(t, twiliotest.WithoutCallbacks())
	c := newClient(a)
	created, err := c.ContentV1.CreateContent(quickReply("ask", "{{1}}", "Yes", "No", "Always"))
	if err != nil {
		t.Fatalf("CreateContent: %v", err)
	}
	if created.Sid == nil || len(*created.Sid) != 34 || !strings.HasPrefix(*created.Sid, "HX") ||
		*created.FriendlyName != "ask" || created.DateCreated == nil || *created.AccountSid != a.AccountSID {
		t.Fatalf("created %+v; want an HX… sid, the name, a date and the account", created)
	}
	qr, ok := (*created.Types)["twilio/quick-reply"].(map[string]any)
	if !ok || qr["body"] != "{{1}}" || len(qr["actions"].([]any)) != 3 {
		t.Errorf("types %v; want the quick reply as sent", *created.Types)
	}
	got := a.Contents()
	if len(got) != 1 || got[0].QuickReply == nil || got[0].QuickReply.Body != "{{1}}" ||
		!slices.Equal(got[0].QuickReply.Actions, []twiliotest.QuickReplyAction{{Title: "Yes", ID: "yes"}, {Title: "No", ID: "no"}, {Title: "Always", ID: "always"}}) {
		t.Errorf("Contents() = %+v; want the quick reply with its three buttons", got)
	}

	for i := range 4 {
		if _, err := c.ContentV1.CreateContent(quickReply(fmt.Sprint("more", i), "Pick", "A")); err != nil {
			t.Fatal(err)
		}
	}
	all, err := c.ContentV1.ListContent((&content.ListContentParams{}).SetPageSize(2))
	if err != nil {
		t.Fatalf("ListContent: %v", err)
	}
	var names []string
	for _, ct := range all {
		names = append(names, *ct.FriendlyName)
	}
	if want := []string{"ask", "more0", "more1", "more2", "more3"}; !slices.Equal(names, want) {
		t.Errorf("listed %q in pages of 2; want %q", names, want)
	}

	send := func(vars string) (*api.ApiV2010Message, error) {
		p := (&api.CreateMessageParams{}).SetTo("whatsapp:+1555").SetFrom("whatsapp:+1444").SetContentSid(*created.Sid)
		if vars != "" {
			p.SetContentVariables(vars)
		}
		return c.Api.CreateMessage(p)
	}
	m, err := send(`{"1":"Run ls?"}`)
	if err != nil {
		t.Fatalf("CreateMessage with the content: %v", err)
	}
	if qr := a.QuickReplyOf(a.Messages()[0]); qr == nil || qr.Body != "{{1}}" {
		t.Errorf("QuickReplyOf the message = %+v; want the content's quick reply", qr)
	}
	if *m.Body != "Run ls?" {
		t.Errorf("message body %q; want the content's body with the variable", *m.Body)
	}
	if _, err := send(""); err != nil {
		t.Fatalf("CreateMessage without variables: %v", err)
	}
	msgs := a.Messages()
	if msgs[0].ContentSID != *created.Sid || msgs[0].ContentVariables["1"] != "Run ls?" || msgs[0].Body != "Run ls?" {
		t.Errorf("recorded %+v; want the content sid, its variables and the body", msgs[0])
	}
	if msgs[1].Body != "a question" {
		t.Errorf("without variables the body is %q; want the content's default", msgs[1].Body)
	}
	_, err = send(fmt.Sprintf(`{"1":%q}`, strings.Repeat("x", 1025)))
	if re := restError(t, err); re.Status != 400 || re.Code != twiliotest.CodeBodyTooLong {
		t.Errorf("a quick reply over 1024 characters: %d %d; want 400 %d", re.Status, re.Code, twiliotest.CodeBodyTooLong)
	}
}

// The fake refuses contents WhatsApp would not show, as Twilio refuses
// malformed ones.
func TestAPIContentValidation(t *testing.T) {
	a := twiliotest.NewAPI(t)
	c := newClient(a)
	noLanguage := quickReply("x", "Pick", "A")
	noLanguage.ContentCreateRequest.Language = ""
	for name, p := range map[string]*content.CreateContentParams{
		"no language":     noLanguage,
		"no buttons":      quickReply("x", "Pick"),
		"four buttons":    quickReply("x", "Pick", "A", "B", "C", "D"),
		"a long title":    quickReply("x", "Pick", strings.Repeat("t", 21)),
		"a long body":     quickReply("x", strings.Repeat("b", 1025), "A"),
		"no body":         quickReply("x", "", "A"),
		"no types at all": (&content.CreateContentParams{}).SetContentCreateRequest(content.ContentCreateRequest{Language: "en"}),
	} {
		_, err := c.ContentV1.CreateContent(p)
		if re := restError(t, err); re.Status != 400 || re.Code != twiliotest.CodeInvalidParameter {
			t.Errorf("%s: %d %d; want 400 %d", name, re.Status, re.Code, twiliotest.CodeInvalidParameter)
		}
	}
	a.FailContent(http.StatusServiceUnavailable, 20500)
	if _, err := c.ContentV1.CreateContent(quickReply("x", "Pick", "A")); restError(t, err).Status != http.StatusServiceUnavailable {
		t.Errorf("create while FailContent: %v; want 503", err)
	}
	a.FailContent(0, 0)
	if _, err := c.ContentV1.ListContent(nil); err != nil {
		t.Errorf("list after FailContent(0, 0): %v", err)
	}
	if n := len(a.Contents()); n != 0 {
		t.Errorf("%d contents kept; want none", n)
	}
	if _, err := restClient(a.URL, a.AccountSID, "wrong").ContentV1.ListContent(nil); restError(t, err).Status != 401 {
		t.Errorf("list with a wrong token: %v; want 401", err)
	}
}

// Typing indicators are recorded with the message they answer; one
// without a message SID, or on another channel, is refused.
func TestAPITyping(t *testing.T) {
	a := twiliotest.NewAPI(t)
	c := newClient(a)
	const sid = "SM0123456789abcdef0123456789abcdef"
	r, err := c.MessagingV2.CreateTypingIndicator((&messaging.CreateTypingIndicatorParams{}).SetChannel("whatsapp").SetMessageId(sid))
	if err != nil || !r.Success {
		t.Fatalf("CreateTypingIndicator: %+v, %v; want success", r, err)
	}
	for name, p := range map[string]*messaging.CreateTypingIndicatorParams{
		"no messageId":   (&messaging.CreateTypingIndicatorParams{}).SetChannel("whatsapp"),
		"not a sid":      (&messaging.CreateTypingIndicatorParams{}).SetChannel("whatsapp").SetMessageId("job-1"),
		"on another one": (&messaging.CreateTypingIndicatorParams{}).SetChannel("sms").SetMessageId(sid),
	} {
		_, err := c.MessagingV2.CreateTypingIndicator(p)
		if re := restError(t, err); re.Status != http.StatusBadRequest || re.Code != twiliotest.CodeInvalidParameter {
			t.Errorf("%s: %d %d; want 400 %d", name, re.Status, re.Code, twiliotest.CodeInvalidParameter)
		}
	}
	_, err = restClient(a.URL, a.AccountSID, "wrong").MessagingV2.CreateTypingIndicator(
		(&messaging.CreateTypingIndicatorParams{}).SetChannel("whatsapp").SetMessageId(sid))
	if re := restError(t, err); re.Status != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d; want 401", re.Status)
	}
	if got := a.Typing(); len(got) != 1 || got[0].MessageID != sid || got[0].Channel != "whatsapp" || got[0].At.IsZero() {
		t.Errorf("Typing() = %+v; want the one accepted call", got)
	}
}
