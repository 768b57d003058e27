package twiliotest

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/textslash/textslash/natstest"
)

// Twilio error codes the fake answers with on its own. Any code can be
// programmed with FailNext and FailTo.
const (
	CodeAuthenticate     = 20003 // wrong or missing credentials (401)
	CodeNotFound         = 20404 // no such resource (404)
	CodeFromRequired     = 21603 // neither From nor MessagingServiceSid
	CodeToRequired       = 21604
	CodeBodyTooLong      = 21617 // Body over 1600 characters
	CodeBodyOrMedia      = 21619 // neither Body, MediaUrl nor ContentSid
	CodeTooManyMedia     = 21623 // over 10 MediaUrl, or over 1 on WhatsApp
	CodeChannelMismatch  = 21910 // From and To on different channels
	CodeOutsideWindow    = 63016 // WhatsApp free-form send outside 24 hours
	CodeTooManyRequests  = 20429
	CodeUnreachable      = 30003 // delivery: handset unreachable
	CodeUnknownRecipient = 30005 // delivery: unknown or inactive destination
)

// errorMessages are Twilio's messages for the codes tests are likely to use.
var errorMessages = map[int]string{
	CodeAuthenticate:     "Authenticate",
	CodeNotFound:         "The requested resource was not found",
	CodeFromRequired:     "A 'From' phone number is required.",
	CodeToRequired:       "A 'To' phone number is required.",
	CodeBodyTooLong:      "The concatenated message body exceeds the 1600 character limit.",
	CodeBodyOrMedia:      "A text message body or media urls must be specified.",
	CodeTooManyMedia:     "Number of media files exceeds allowed limit",
	CodeChannelMismatch:  "Invalid From and To pair. From and To should be of the same channel",
	CodeOutsideWindow:    "Failed to send freeform message because you are outside the allowed window. If you are using WhatsApp, please use a Message Template.",
	CodeTooManyRequests:  "Too Many Requests",
	CodeUnreachable:      "Unreachable destination handset",
	CodeUnknownRecipient: "Unknown destination handset",
	20500:                "An internal server error has occurred",
	21211:                "Invalid 'To' Phone Number",
	21610:                "Attempt to send to unsubscribed recipient",
}

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

// Callback is a status callback the fake sent.
type Callback struct {
	URL        string
	MessageSID string
	Status     string // MessageStatus: sent, delivered, failed or undelivered
	ErrorCode  int    // 0 unless failed or undelivered
	// StatusCode is the receiver's HTTP status, 0 when Err is set.
	StatusCode int
	Err        error
	At         time.Time
}

// Option configures NewAPI.
type Option func(*options)

type options struct {
	sid, token    string
	callbackDelay time.Duration
	noCallbacks   bool
	quiet         bool
	onMessage     func(Message)
}

// WithCredentials makes the fake accept accountSID ("AC" and 32 hex digits)
// and authToken (alphanumeric, as twilio-go requires) instead of random ones.
func WithCredentials(accountSID, authToken string) Option {
	return func(o *options) { o.sid, o.token = accountSID, authToken }
}

// WithCallbackDelay sets the wait before each status callback (10ms unless
// set).
func WithCallbackDelay(d time.Duration) Option {
	return func(o *options) { o.callbackDelay = d }
}

// WithoutCallbacks turns status callbacks off.
func WithoutCallbacks() Option {
	return func(o *options) { o.noCallbacks = true }
}

// OnMessage calls f with each message the API accepts, before answering the
// request (benchmarks that time replies as they come).
func OnMessage(f func(Message)) Option {
	return func(o *options) { o.onMessage = f }
}

// Quiet leaves requests out of the test log (benchmarks, whose logs are
// always printed).
func Quiet() Option {
	return func(o *options) { o.quiet = true }
}

// API is a fake Twilio REST API for the Messages resource. It answers
// POST /2010-04-01/Accounts/{AccountSid}/Messages.json like Twilio:
// basic auth with AccountSID and AuthToken, a form with To, From or
// MessagingServiceSid, Body, MediaUrl (repeated), ContentSid with
// ContentVariables, and StatusCallback, validated as Twilio does; 201 and
// a Message resource, or Twilio's JSON error. Accepted messages get signed
// status callbacks, "sent" then "delivered", when they name a
// StatusCallback. Media added with AddMedia is served at Twilio-shaped URLs.
//
// It also stands in for content.twilio.com's Content API (POST and GET
// /v1/Content: Contents, AddContent; a message's ContentSid must name one
// of them) and messaging.twilio.com's typing indicator (POST
// /v2/Indicators/Typing.json: Typing). A client pointed at URL sends every
// host there.
//
// The fake is stricter than Twilio in one place: Twilio drops all but the
// first attachment of a WhatsApp message, the fake refuses such a message
// with CodeTooManyMedia, so that no attachment is lost unnoticed.
type API struct {
	URL        string // base URL, in place of https://api.twilio.com
	AccountSID string
	AuthToken  string

	t    testing.TB
	opts options
	srv  *httptest.Server
	wg   sync.WaitGroup // status callback deliveries

	conns atomic.Int64 // connections accepted

	mu           sync.Mutex
	msgs         []Message
	attempts     []attempt
	callbacks    []Callback
	scheduled    int       // messages whose callbacks were scheduled
	failNext     []failure // consumed one per create
	failTo       map[string]failure
	failDelivery map[string]failure // by recipient, final set
	closed       map[string]bool    // WhatsApp recipients outside their window
	media        map[string]media   // by URL path
	contents     []Content
	failContent  failure // of every Content API request, when code is set
	typing       []TypingCall
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

type media struct {
	contentType string
	data        []byte
}

// NewAPI starts a fake Twilio REST API with random credentials; it is
// closed, and pending status callbacks are dropped, when the test ends.
func NewAPI(t testing.TB, opts ...Option) *API {
	t.Helper()
	o := options{sid: newID("AC"), token: newID(""), callbackDelay: 10 * time.Millisecond}
	for _, opt := range opts {
		opt(&o)
	}
	a := &API{
		AccountSID: o.sid, AuthToken: o.token, t: t, opts: o,
		failTo: map[string]failure{}, failDelivery: map[string]failure{}, closed: map[string]bool{}, media: map[string]media{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("/2010-04-01/Accounts/{sid}/Messages.json", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			a.list(w, r)
			return
		}
		a.create(ctx, w, r)
	})
	mux.HandleFunc("/2010-04-01/Accounts/{sid}/Messages/{msg}/Media/{media}", a.serveMedia)
	mux.HandleFunc("/v1/Content", a.serveContents)
	mux.HandleFunc("/v2/Indicators/Typing.json", a.serveTyping)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		a.t.Logf("twiliotest: %s %s: not found", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, CodeNotFound, "")
	})
	a.srv = httptest.NewUnstartedServer(mux)
	a.srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			a.conns.Add(1)
		}
	}
	a.srv.Start()
	a.URL = a.srv.URL
	t.Cleanup(func() {
		cancel()
		a.srv.Close() // no new deliveries once the handlers are done
		a.wg.Wait()
	})
	return a
}

// FailNext makes the next n create requests fail with HTTP status and
// Twilio error code, before any other check but authentication.
func (a *API) FailNext(n int, status, code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for range n {
		a.failNext = append(a.failNext, failure{status: status, code: code})
	}
}

// FailTo makes every create request to the recipient fail with HTTP
// status and Twilio error code, e.g. 400 and CodeOutsideWindow; code 0
// ends it.
func (a *API) FailTo(to string, status, code int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if code == 0 {
		delete(a.failTo, to)
		return
	}
	a.failTo[to] = failure{status: status, code: code}
}

// CloseWindow puts the WhatsApp recipient to ("whatsapp:+…") outside its
// 24-hour customer service window, as when the person last wrote longer
// ago: a free-form message to it is accepted and then fails, its status
// callback "failed" with ErrorCode CodeOutsideWindow, as Twilio reports
// it; a message with the ContentSid of an approved template
// (Content.Approved) is delivered. OpenWindow ends it, as the person's
// next message does.
func (a *API) CloseWindow(to string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed[to] = true
}

// OpenWindow ends CloseWindow: the person wrote.
func (a *API) OpenWindow(to string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.closed, to)
}

// FailDelivery makes messages to the recipient accepted but not delivered:
// their status callbacks end in final, "failed" (no "sent" before it) or
// "undelivered" (after "sent"), with ErrorCode code, e.g. CodeUnreachable.
func (a *API) FailDelivery(to, final string, code int) {
	a.t.Helper()
	if final != "failed" && final != "undelivered" {
		a.t.Fatalf("twiliotest: FailDelivery(%q, %q): want failed or undelivered", to, final)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failDelivery[to] = failure{final: final, code: code}
}

// Messages returns the accepted messages, in arrival order.
func (a *API) Messages() []Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Message(nil), a.msgs...)
}

// Conns is the number of connections the API accepted.
func (a *API) Conns() int { return int(a.conns.Load()) }

// Attempts is the number of create requests received, refused ones
// included.
func (a *API) Attempts() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.attempts)
}

// Callbacks returns the status callbacks sent so far, in order.
func (a *API) Callbacks() []Callback {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Callback(nil), a.callbacks...)
}

// WaitMessages waits until at least n messages were accepted and returns
// them all; after timeout it fails the test with every create request
// received.
func (a *API) WaitMessages(t testing.TB, n int, timeout time.Duration) []Message {
	t.Helper()
	var msgs []Message
	natstest.CheckFor(t, timeout, 5*time.Millisecond, func() error {
		if msgs = a.Messages(); len(msgs) < n {
			return fmt.Errorf("twiliotest: %d messages accepted; want %d\n%s", len(msgs), n, a.dump())
		}
		return nil
	})
	return msgs
}

// dump lists the create requests received, one a line.
func (a *API) dump() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.attempts) == 0 {
		return "no create requests received"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d create requests received:\n", len(a.attempts))
	for i, at := range a.attempts {
		fmt.Fprintf(&b, "  %d. %s %s to=%q from=%q body=%q media=%d: %d",
			i+1, at.at.Format("15:04:05.000"), at.sid, at.form.Get("To"), at.form.Get("From"),
			prefix(at.form.Get("Body"), 60), len(at.form["MediaUrl"]), at.status)
		if c := at.form.Get("ContentSid"); c != "" {
			fmt.Fprintf(&b, " content=%s %s", c, at.form.Get("ContentVariables"))
		}
		if at.code != 0 {
			fmt.Fprintf(&b, " code %d", at.code)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// AddMedia stores an inbound attachment and returns its URL,
// {URL}/2010-04-01/Accounts/{AccountSID}/Messages/MM…/Media/ME…, which
// answers GET with basic auth with data and contentType.
func (a *API) AddMedia(contentType string, data []byte) string {
	path := fmt.Sprintf("/2010-04-01/Accounts/%s/Messages/%s/Media/%s", a.AccountSID, newID("MM"), newID("ME"))
	a.mu.Lock()
	defer a.mu.Unlock()
	a.media[path] = media{contentType: contentType, data: data}
	return a.URL + path
}

func (a *API) serveMedia(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, 20004, "Method not allowed")
		return
	}
	if !a.authorized(w, r) {
		a.t.Logf("twiliotest: %s %s: 401", r.Method, r.URL.Path)
		return
	}
	a.mu.Lock()
	m, ok := a.media[r.URL.Path]
	a.mu.Unlock()
	if !ok {
		a.t.Logf("twiliotest: %s %s: no such media", r.Method, r.URL.Path)
		writeError(w, http.StatusNotFound, CodeNotFound, "")
		return
	}
	w.Header().Set("Content-Type", m.contentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(m.data)))
	w.Write(m.data)
}

// authorized checks basic auth and the account in the path, if the path
// has one, answering 401 when they do not match.
func (a *API) authorized(w http.ResponseWriter, r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	if sid := r.PathValue("sid"); ok && (sid == "" || sid == a.AccountSID) &&
		subtle.ConstantTimeCompare([]byte(user), []byte(a.AccountSID)) == 1 &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(a.AuthToken)) == 1 {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="Twilio API"`)
	writeError(w, http.StatusUnauthorized, CodeAuthenticate, "")
	return false
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

// resource is m as Twilio's Message resource JSON.
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

// callbackClient sends status callbacks.
var callbackClient = &http.Client{Timeout: 10 * time.Second}

// sendCallbacks posts m's status callbacks in order: sent and delivered,
// or the failure programmed with FailDelivery.
func (a *API) sendCallbacks(ctx context.Context, m Message, f failure, fail bool) {
	defer a.wg.Done()
	steps := []string{"sent", "delivered"}
	switch {
	case fail && f.final == "failed":
		steps = []string{"failed"}
	case fail:
		steps = []string{"sent", "undelivered"}
	}
	for _, status := range steps {
		select {
		case <-ctx.Done():
			return
		case <-time.After(a.opts.callbackDelay):
		}
		code := 0
		if status == "failed" || status == "undelivered" {
			code = f.code
		}
		a.callback(ctx, m, status, code)
	}
}

// callback posts one signed status callback, as Twilio does.
func (a *API) callback(ctx context.Context, m Message, status string, code int) {
	p := url.Values{
		"MessageSid":    {m.SID},
		"SmsSid":        {m.SID},
		"MessageStatus": {status},
		"SmsStatus":     {status},
		"AccountSid":    {a.AccountSID},
		"To":            {m.To},
		"From":          {m.From},
		"ApiVersion":    {"2010-04-01"},
	}
	if m.MessagingServiceSID != "" {
		p.Set("MessagingServiceSid", m.MessagingServiceSID)
	}
	if code != 0 {
		p.Set("ErrorCode", strconv.Itoa(code))
	}
	cb := Callback{URL: m.StatusCallback, MessageSID: m.SID, Status: status, ErrorCode: code, At: time.Now()}
	req := SignedRequest(a.AuthToken, m.StatusCallback, m.StatusCallback, p).WithContext(ctx)
	resp, err := callbackClient.Do(req)
	if err != nil {
		cb.Err = err
	} else {
		resp.Body.Close()
		cb.StatusCode = resp.StatusCode
	}
	if ctx.Err() != nil {
		return // the test is over
	}
	a.mu.Lock()
	a.callbacks = append(a.callbacks, cb)
	a.mu.Unlock()
	if err != nil {
		a.t.Logf("twiliotest: status callback %s %s to %s: %v", m.SID, status, m.StatusCallback, err)
	} else {
		a.t.Logf("twiliotest: status callback %s %s to %s: %d", m.SID, status, m.StatusCallback, cb.StatusCode)
	}
}

// writeError writes Twilio's JSON error body; msg "" is Twilio's message
// for code.
func writeError(w http.ResponseWriter, status, code int, msg string) {
	if msg == "" {
		msg = errorMessages[code]
	}
	if msg == "" {
		msg = fmt.Sprintf("twiliotest: error %d", code)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"code":      code,
		"message":   msg,
		"more_info": fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code),
		"status":    status,
	})
}

// prefix is s cut to n characters, with "…" when cut.
func prefix(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
