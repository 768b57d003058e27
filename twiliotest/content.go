package twiliotest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"
)

// Error codes of the Content API and of messages that use its contents.
const (
	CodeInvalidParameter = 20422 // a malformed Content create, a typing indicator without messageId
	CodeContentSid       = 21655 // ContentSid names no content of the account
	CodeContentVariables = 21656 // ContentVariables is not a JSON object of strings
)

// WhatsApp's limits on a twilio/quick-reply, which the fake enforces.
const (
	quickReplyBodyLimit  = 1024
	quickReplyButtons    = 3 // WhatsApp's most; Twilio takes up to 10 for other channels
	quickReplyTitleLimit = 20
	quickReplyIDLimit    = 200
)

func init() {
	errorMessages[CodeInvalidParameter] = "Invalid Parameter"
	errorMessages[CodeContentSid] = "The Content SID is Invalid."
	errorMessages[CodeContentVariables] = "The Content Variables parameter is invalid."
}

// Content is a Content API resource the fake holds (a content template).
type Content struct {
	SID          string // "HX" and 32 hex digits
	FriendlyName string
	Language     string
	Variables    map[string]string          // default values of the placeholders
	Types        map[string]json.RawMessage // by content type ("twilio/quick-reply"), as sent
	// QuickReply is the twilio/quick-reply type, when the content has one.
	QuickReply *QuickReply
	// Approved: WhatsApp approved the content as a template, which may be
	// sent outside the person's 24-hour window (CloseWindow). Contents
	// made through the API are not approved.
	Approved bool
	At       time.Time
}

// QuickReply is a twilio/quick-reply content type: a body, and buttons
// that send their ID back as ButtonPayload and their title as ButtonText.
type QuickReply struct {
	Body    string             `json:"body"`
	Actions []QuickReplyAction `json:"actions"`
}

// QuickReplyAction is one button of a quick reply.
type QuickReplyAction struct {
	Title string `json:"title"`
	ID    string `json:"id,omitempty"`
}

// contentRequest is the JSON body of POST /v1/Content.
type contentRequest struct {
	FriendlyName string                     `json:"friendly_name"`
	Language     string                     `json:"language"`
	Variables    map[string]string          `json:"variables"`
	Types        map[string]json.RawMessage `json:"types"`
}

// Contents returns the contents created so far, oldest first.
func (a *API) Contents() []Content {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Content(nil), a.contents...)
}

// QuickReplyOf is the quick reply m was sent with; nil when m was not
// sent with a twilio/quick-reply content.
func (a *API) QuickReplyOf(m Message) *QuickReply {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, _ := a.content(m.ContentSID)
	return c.QuickReply
}

// AddContent stores c as if it had been created through the API (a
// template made in Twilio's console, or by an earlier run) and returns it
// with its SID (a new one unless set) and time.
func (a *API) AddContent(c Content) Content {
	if c.SID == "" {
		c.SID = newID("HX")
	}
	c.At = time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.contents = append(a.contents, c)
	return c
}

// FailContent makes every Content API request fail with HTTP status and
// Twilio error code, e.g. 503 and 20500; FailContent(0, 0) ends it.
func (a *API) FailContent(status, code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failContent = failure{status: status, code: code}
}

// content finds a content by SID; a.mu is held.
func (a *API) content(sid string) (Content, bool) {
	for _, c := range a.contents {
		if c.SID == sid {
			return c, true
		}
	}
	return Content{}, false
}

// serveContents answers the Content API's collection,
// https://content.twilio.com/v1/Content: POST creates a content from
// Twilio's JSON body, GET lists them a page at a time.
func (a *API) serveContents(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(w, r) {
		a.logf("%s %s: 401", r.Method, r.URL.Path)
		return
	}
	a.mu.Lock()
	f := a.failContent
	a.mu.Unlock()
	if f.code != 0 {
		a.logf("%s %s: %d code %d (FailContent)", r.Method, r.URL.Path, f.status, f.code)
		writeError(w, f.status, f.code, "")
		return
	}
	switch r.Method {
	case http.MethodPost:
		a.createContent(w, r)
	case http.MethodGet:
		a.listContents(w, r)
	default:
		writeError(w, http.StatusMethodNotAllowed, 20004, "Method not allowed")
	}
}

func (a *API) createContent(w http.ResponseWriter, r *http.Request) {
	var req contentRequest
	c, err := Content{}, error(nil)
	if err = json.NewDecoder(r.Body).Decode(&req); err == nil {
		c, err = newContent(req)
	}
	if err != nil {
		a.logf("create content %q: 400 %v", req.FriendlyName, err)
		writeError(w, http.StatusBadRequest, CodeInvalidParameter, "twiliotest: "+err.Error())
		return
	}
	c = a.AddContent(c)
	a.logf("create content %q: 201 %s", c.FriendlyName, c.SID)
	writeJSON(w, http.StatusCreated, a.contentResource(c))
}

// newContent checks a create request as Twilio does, and WhatsApp's
// limits on a quick reply besides.
func newContent(req contentRequest) (Content, error) {
	c := Content{FriendlyName: req.FriendlyName, Language: req.Language, Variables: req.Variables, Types: req.Types}
	if c.Language == "" {
		return c, fmt.Errorf("language is required")
	}
	if len(c.Types) == 0 {
		return c, fmt.Errorf("types is required")
	}
	raw, ok := c.Types["twilio/quick-reply"]
	if !ok {
		return c, nil
	}
	var qr QuickReply
	if err := json.Unmarshal(raw, &qr); err != nil {
		return c, fmt.Errorf("twilio/quick-reply: %v", err)
	}
	switch {
	case qr.Body == "":
		return c, fmt.Errorf("twilio/quick-reply: body is required")
	case utf8.RuneCountInString(qr.Body) > quickReplyBodyLimit:
		return c, fmt.Errorf("twilio/quick-reply: body over %d characters", quickReplyBodyLimit)
	case len(qr.Actions) == 0 || len(qr.Actions) > quickReplyButtons:
		return c, fmt.Errorf("twilio/quick-reply: %d actions; WhatsApp takes 1 to %d", len(qr.Actions), quickReplyButtons)
	}
	for _, act := range qr.Actions {
		if act.Title == "" || utf8.RuneCountInString(act.Title) > quickReplyTitleLimit || len(act.ID) > quickReplyIDLimit {
			return c, fmt.Errorf("twilio/quick-reply: action %q: want a title of 1 to %d characters and an id of at most %d",
				act.Title, quickReplyTitleLimit, quickReplyIDLimit)
		}
	}
	c.QuickReply = &qr
	return c, nil
}

// listContents answers a page of contents in the Content API's shape:
// {"contents": [...], "meta": {..., "next_page_url": ...}}, pages of
// PageSize (50 unless set) counted by Page from 0.
func (a *API) listContents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	size, err := strconv.Atoi(q.Get("PageSize"))
	if err != nil || size <= 0 {
		size = 50
	}
	page, _ := strconv.Atoi(q.Get("Page"))
	page = max(page, 0)
	a.mu.Lock()
	all := append([]Content(nil), a.contents...)
	a.mu.Unlock()
	items := []map[string]any{}
	for i := page * size; i < len(all) && i < (page+1)*size; i++ {
		items = append(items, a.contentResource(all[i]))
	}
	pageURL := func(p int) string {
		return fmt.Sprintf("%s/v1/Content?PageSize=%d&Page=%d", contentHost, size, p)
	}
	var next, prev any
	if (page+1)*size < len(all) {
		next = pageURL(page+1) + "&PageToken=PT" + strconv.Itoa((page+1)*size)
	}
	if page > 0 {
		prev = pageURL(page - 1)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"contents": items,
		"meta": map[string]any{
			"page": page, "page_size": size, "first_page_url": pageURL(0), "previous_page_url": prev,
			"url": pageURL(page), "next_page_url": next, "key": "contents",
		},
	})
}

// contentHost is the Content API's host; a client pointed at the fake
// rewrites it, as it does api.twilio.com.
const contentHost = "https://content.twilio.com"

// contentResource is c as the Content API's JSON.
func (a *API) contentResource(c Content) map[string]any {
	date := c.At.UTC().Format(time.RFC3339)
	u := contentHost + "/v1/Content/" + c.SID
	vars := c.Variables
	if vars == nil {
		vars = map[string]string{}
	}
	return map[string]any{
		"account_sid":   a.AccountSID,
		"date_created":  date,
		"date_updated":  date,
		"friendly_name": c.FriendlyName,
		"language":      c.Language,
		"links": map[string]string{
			"approval_create": u + "/ApprovalRequests/whatsapp",
			"approval_fetch":  u + "/ApprovalRequests",
		},
		"sid":       c.SID,
		"types":     c.Types,
		"url":       u,
		"variables": vars,
	}
}

// placeholderRE is a content variable's placeholder, {{1}}.
var placeholderRE = regexp.MustCompile(`\{\{\s*([A-Za-z0-9_]+)\s*\}\}`)

// render checks a message's ContentSid and ContentVariables and returns
// the content and the variables; the failure's code is 0 when they are
// valid. a.mu is held.
func (a *API) render(form url.Values) (Content, map[string]string, failure) {
	c, ok := a.content(form.Get("ContentSid"))
	if !ok {
		return c, nil, failure{status: http.StatusBadRequest, code: CodeContentSid}
	}
	vars := map[string]string{}
	if raw := form.Get("ContentVariables"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &vars); err != nil {
			return c, nil, failure{status: http.StatusBadRequest, code: CodeContentVariables}
		}
	}
	if c.QuickReply != nil && utf8.RuneCountInString(c.body(vars)) > quickReplyBodyLimit {
		return c, nil, failure{status: http.StatusBadRequest, code: CodeBodyTooLong,
			msg: fmt.Sprintf("twiliotest: a twilio/quick-reply body over %d characters (WhatsApp would not deliver it)", quickReplyBodyLimit)}
	}
	return c, vars, failure{}
}

// body is the text a message of c shows with vars: its quick reply's or
// its twilio/text's body, placeholders replaced by vars or else by c's
// default values.
func (c Content) body(vars map[string]string) string {
	var text struct {
		Body string `json:"body"`
	}
	if c.QuickReply != nil {
		text.Body = c.QuickReply.Body
	} else if raw, ok := c.Types["twilio/text"]; ok {
		_ = json.Unmarshal(raw, &text)
	}
	return placeholderRE.ReplaceAllStringFunc(text.Body, func(p string) string {
		name := placeholderRE.FindStringSubmatch(p)[1]
		if v, ok := vars[name]; ok {
			return v
		}
		return c.Variables[name]
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// logf logs a line about a request unless the fake is quiet.
func (a *API) logf(format string, args ...any) {
	if !a.opts.quiet {
		a.t.Logf("twiliotest: "+format, args...)
	}
}
