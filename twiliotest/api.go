// The fake API: its options, NewAPI, the failures and windows a test
// programs, and what it reads back (messages, attempts, callbacks).

package twiliotest

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
)

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
	hold         string // a message whose body has it is kept, its answer withheld (Hold)
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
