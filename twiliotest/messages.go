// The Messages resource: a create checked as Twilio does (programmed
// failures, the form's rules, templates), each create request recorded
// and logged, and the message list and resource as Twilio's JSON.

package twiliotest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is a message the fake accepted.
type Message struct {
	SID                 string // "SM" and 32 hex digits
	To                  string
	From                string
	MessagingServiceSID string
	// Body is the text sent; for a content message, the content's body
	// with the variables filled in.
	Body      string
	MediaURLs []string // in the order sent
	// ContentSID and ContentVariables: the content (Contents) the message
	// was sent with, and the values of its placeholders.
	ContentSID       string
	ContentVariables map[string]string
	StatusCallback   string
	At               time.Time
	Form             url.Values // the whole form as received
}

type attempt struct {
	at     time.Time
	form   url.Values
	status int
	code   int
	sid    string
}

// failure is a programmed or validation failure of a create, or, with
// final set, of a delivery.
type failure struct {
	status int    // HTTP status of the refused create
	code   int    // Twilio error code
	msg    string // error message; "" for Twilio's own
	final  string // FailDelivery's last MessageStatus: failed or undelivered
}

func (a *API) create(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	at := attempt{at: time.Now()}
	_ = r.ParseForm()
	at.form = r.PostForm
	recorded := false // an accepted message's attempt is recorded with it
	defer func() { a.finish(at, recorded) }()
	if r.Method != http.MethodPost {
		at.status, at.code = http.StatusMethodNotAllowed, 20004
		writeError(w, at.status, at.code, "Method not allowed")
		return
	}
	if !a.authorized(w, r) {
		at.status, at.code = http.StatusUnauthorized, CodeAuthenticate
		return
	}
	m := Message{
		SID:                 newID("SM"),
		To:                  at.form.Get("To"),
		From:                at.form.Get("From"),
		MessagingServiceSID: at.form.Get("MessagingServiceSid"),
		Body:                at.form.Get("Body"),
		MediaURLs:           at.form["MediaUrl"],
		StatusCallback:      at.form.Get("StatusCallback"),
		At:                  at.at,
		Form:                at.form,
	}
	f, fail, template := a.outcome(&m, at.form)
	if fail {
		at.status, at.code = f.status, f.code
		writeError(w, f.status, f.code, f.msg)
		return
	}

	at.status, at.sid = http.StatusCreated, m.SID
	a.mu.Lock()
	// Together, so that who sees the message also counts its attempt.
	a.msgs, a.attempts, recorded = append(a.msgs, m), append(a.attempts, at), true
	df, failDelivery := a.failDelivery[m.To]
	if a.closed[m.To] && !template {
		df, failDelivery = failure{final: "failed", code: CodeOutsideWindow}, true
	}
	if m.StatusCallback != "" && !a.opts.noCallbacks {
		a.scheduled++
		a.wg.Add(1)
		go a.sendCallbacks(ctx, m, df, failDelivery)
	}
	a.mu.Unlock()
	if a.opts.onMessage != nil {
		a.opts.onMessage(m)
	}
	if a.held(m) {
		<-r.Context().Done() // taken, never answered: the client hangs up
		return
	}

	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(a.resource(m))
}

// finish records a refused attempt (an accepted one is recorded with its
// message) and logs the attempt, unless the API is quiet.
func (a *API) finish(at attempt, recorded bool) {
	a.mu.Lock()
	if !recorded {
		a.attempts = append(a.attempts, at)
	}
	a.mu.Unlock()
	line := fmt.Sprintf("twiliotest: create to=%q body=%q media=%d: %d", at.form.Get("To"),
		prefix(at.form.Get("Body"), 40), len(at.form["MediaUrl"]), at.status)
	if c := at.form.Get("ContentSid"); c != "" {
		line += " content=" + c
	}
	if at.code != 0 {
		line += fmt.Sprintf(" code %d", at.code)
	}
	if at.sid != "" {
		line += " " + at.sid
	}
	if !a.opts.quiet {
		a.t.Log(line)
	}
}

// outcome says whether the create of m fails: a failure set up for it, or
// a form Twilio would refuse. A template's create renders it into m;
// template says it is an approved one, which may go outside the window.
func (a *API) outcome(m *Message, form url.Values) (f failure, fail, template bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.failNext) > 0 {
		f, fail, a.failNext = a.failNext[0], true, a.failNext[1:]
	} else {
		f, fail = a.failTo[m.To]
	}
	if !fail {
		f = validate(form)
		fail = f.code != 0
	}
	if !fail && form.Get("ContentSid") != "" {
		var c Content
		c, m.ContentVariables, f = a.render(form)
		m.ContentSID, m.Body, fail = c.SID, c.body(m.ContentVariables), f.code != 0
		template = c.Approved
	}
	return f, fail, template
}

// validate checks form as Twilio does; the failure's code is 0 if valid.
func validate(form url.Values) failure {
	to, from := form.Get("To"), form.Get("From")
	whatsapp := strings.HasPrefix(to, "whatsapp:")
	media := form["MediaUrl"]
	code, msg := 0, ""
	switch {
	case to == "":
		code = CodeToRequired
	case from == "" && form.Get("MessagingServiceSid") == "":
		code = CodeFromRequired
	case from != "" && whatsapp != strings.HasPrefix(from, "whatsapp:"):
		code = CodeChannelMismatch
	case form.Get("Body") == "" && len(media) == 0 && form.Get("ContentSid") == "":
		code = CodeBodyOrMedia
	case utf8.RuneCountInString(form.Get("Body")) > 1600:
		code = CodeBodyTooLong
	case len(media) > 10:
		code = CodeTooManyMedia
	case len(media) > 1 && whatsapp:
		code, msg = CodeTooManyMedia, "twiliotest: WhatsApp takes one media per message (Twilio would drop all but the first)"
	}
	return failure{status: http.StatusBadRequest, code: code, msg: msg}
}

// list answers Twilio's message list: the account's messages, newest
// first, filtered by To and From, one page of PageSize (50 unless set).
func (a *API) list(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(w, r) {
		return
	}
	q := r.URL.Query()
	size, err := strconv.Atoi(q.Get("PageSize"))
	if err != nil || size <= 0 {
		size = 50
	}
	a.mu.Lock()
	page := []map[string]any{}
	for i := len(a.msgs) - 1; i >= 0 && len(page) < size; i-- {
		m := a.msgs[i]
		if (q.Get("To") == "" || m.To == q.Get("To")) && (q.Get("From") == "" || m.From == q.Get("From")) {
			page = append(page, a.resource(m))
		}
	}
	a.mu.Unlock()
	uri := r.URL.RequestURI()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"messages": page, "page": 0, "page_size": size, "start": 0, "end": max(len(page)-1, 0),
		"uri": uri, "first_page_uri": uri, "next_page_uri": nil, "previous_page_uri": nil,
	})
}

// resource is m as Twilio's Message resource JSON.
func (a *API) resource(m Message) map[string]any {
	date := m.At.UTC().Format(time.RFC1123Z)
	uri := fmt.Sprintf("/2010-04-01/Accounts/%s/Messages/%s", a.AccountSID, m.SID)
	status := "queued"
	if m.From == "" {
		status = "accepted" // sent through a Messaging Service, sender not chosen yet
	}
	return map[string]any{
		"account_sid":           a.AccountSID,
		"api_version":           "2010-04-01",
		"body":                  m.Body,
		"date_created":          date,
		"date_sent":             nil,
		"date_updated":          date,
		"direction":             "outbound-api",
		"error_code":            nil,
		"error_message":         nil,
		"from":                  nullable(m.From),
		"messaging_service_sid": nullable(m.MessagingServiceSID),
		"num_media":             strconv.Itoa(len(m.MediaURLs)),
		"num_segments":          strconv.Itoa(segments(m.Body)),
		"price":                 nil,
		"price_unit":            "USD",
		"sid":                   m.SID,
		"status":                status,
		"subresource_uris":      map[string]string{"media": uri + "/Media.json"},
		"to":                    m.To,
		"uri":                   uri + ".json",
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// prefix is s cut to n characters, with "…" when cut.
func prefix(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// Hold makes the API take the next message whose body contains text (it
// is in Messages) but never answer its create, until the client hangs up:
// as when the sender dies between a send and its answer.
func (a *API) Hold(text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hold = text
}

// held reports whether m is the message Hold waits for, once.
func (a *API) held(m Message) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hold == "" || !strings.Contains(m.Body, a.hold) {
		return false
	}
	a.hold = ""
	return true
}
