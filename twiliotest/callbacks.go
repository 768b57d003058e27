// Status callbacks: the signed posts that follow an accepted message,
// "sent" then "delivered", or the delivery failure programmed for its
// recipient.

package twiliotest

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

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
