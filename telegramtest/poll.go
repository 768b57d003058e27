// Receiving updates as the Bot API serves them: a test queues a person's
// updates (Send), which getUpdates hands out by long polling until a
// later call's offset confirms them; setWebhook and deleteWebhook switch
// between the two ways, and getUpdates is refused while a webhook is set.

package telegramtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// UpdateCall is a getUpdates, setWebhook or deleteWebhook call, in the
// order they came. They are kept apart from Calls, and FailNext and
// Attempts leave them out: a poll running beside a test's messages
// changes neither.
type UpdateCall struct {
	Method string
	// Offset, Timeout (seconds) and Limit of a getUpdates.
	Offset  int64
	Timeout int
	Limit   int
	// AllowedUpdates of a getUpdates or setWebhook.
	AllowedUpdates []string
	// URL and Secret (secret_token) of a setWebhook.
	URL, Secret string
	// DropPending: drop_pending_updates.
	DropPending bool
	// Status is the HTTP status answered; 0 while a poll waits.
	Status int
	// Updates are the update ids a getUpdates handed out.
	Updates []int64
}

// pending is an update waiting to be confirmed.
type pending struct {
	id   int64
	body json.RawMessage
}

// waiter is a getUpdates waiting for updates.
type waiter struct{ conflict chan struct{} }

// Send queues an update (the JSON of Update or Callback) for getUpdates:
// handed out to every poll until one asks for an offset past it.
func (a *API) Send(update []byte) {
	var u struct {
		ID int64 `json:"update_id"`
	}
	if err := json.Unmarshal(update, &u); err != nil || u.ID <= 0 {
		a.t.Fatalf("telegramtest: Send of an update without an update_id: %s", update)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pending = append(a.pending, pending{id: u.ID, body: update})
	a.wake()
}

// wake tells the polls waiting that something changed; a.mu held.
func (a *API) wake() {
	if a.arrived != nil {
		close(a.arrived)
	}
	a.arrived = make(chan struct{})
}

// UpdateCalls returns the getUpdates, setWebhook and deleteWebhook calls
// so far, in the order they came.
func (a *API) UpdateCalls() []UpdateCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]UpdateCall, len(a.updateCalls))
	for i, c := range a.updateCalls {
		out[i] = c
		out[i].Updates = append([]int64(nil), c.Updates...)
	}
	return out
}

// Webhook is the webhook set (setWebhook's url and secret_token); empty
// when none.
func (a *API) Webhook() (url, secret string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.webhookURL, a.webhookSecret
}

// Pending counts the updates not yet confirmed.
func (a *API) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending)
}

// updateMethod takes the methods of receiving updates; false for any
// other method.
func (a *API) updateMethod(w http.ResponseWriter, r *http.Request, method string, form url.Values) bool {
	switch method {
	case "getUpdates":
		a.getUpdates(w, r, form)
	case "setWebhook":
		a.setWebhook(w, form)
	case "deleteWebhook":
		a.deleteWebhook(w, form)
	default:
		return false
	}
	return true
}

// record keeps c and returns its index; a.mu held.
func (a *API) recordUpdateCall(c UpdateCall) int {
	a.updateCalls = append(a.updateCalls, c)
	return len(a.updateCalls) - 1
}

// secretRE is what setWebhook takes as secret_token.
var secretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// setWebhook takes an https URL (an empty one removes the webhook, as
// deleteWebhook does) and an optional secret_token of 1 to 256 letters,
// digits, _ and -.
func (a *API) setWebhook(w http.ResponseWriter, form url.Values) {
	c := UpdateCall{Method: "setWebhook", URL: form.Get("url"), Secret: form.Get("secret_token"), DropPending: form.Get("drop_pending_updates") == "true"}
	c.AllowedUpdates = allowedUpdates(form)
	code, desc := http.StatusOK, ""
	switch {
	case c.URL != "" && !strings.HasPrefix(c.URL, "https://"):
		code, desc = http.StatusBadRequest, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"
	case c.Secret != "" && !secretRE.MatchString(c.Secret):
		code, desc = http.StatusBadRequest, "Bad Request: secret token contains unallowed characters"
	}
	c.Status = code
	a.mu.Lock()
	a.recordUpdateCall(c)
	if code == http.StatusOK {
		a.webhookURL, a.webhookSecret = c.URL, c.Secret
		if c.URL == "" {
			a.webhookSecret = ""
		}
		if c.DropPending {
			a.pending = nil
		}
		a.wake()
	}
	a.mu.Unlock()
	a.t.Logf("telegramtest: setWebhook url=%q secret set=%v: %d", c.URL, c.Secret != "", code)
	if code != http.StatusOK {
		fail(w, code, desc)
		return
	}
	write(w, http.StatusOK, reply{OK: true, Result: true, Description: "Webhook was set"})
}

// deleteWebhook removes the webhook, if any.
func (a *API) deleteWebhook(w http.ResponseWriter, form url.Values) {
	c := UpdateCall{Method: "deleteWebhook", DropPending: form.Get("drop_pending_updates") == "true", Status: http.StatusOK}
	a.mu.Lock()
	a.recordUpdateCall(c)
	a.webhookURL, a.webhookSecret = "", ""
	if c.DropPending {
		a.pending = nil
	}
	a.wake()
	a.mu.Unlock()
	a.t.Logf("telegramtest: deleteWebhook")
	write(w, http.StatusOK, reply{OK: true, Result: true})
}

// getUpdates answers as the Bot API does: refused (409) while a webhook is
// set; an offset confirms (forgets) every update before it; the updates
// from the offset on (at most limit, 100 by default) come at once, or
// when the first arrives within timeout seconds, else none. A second poll
// ends the first with 409 ("terminated by other getUpdates request"): one
// bot, one poller.
func (a *API) getUpdates(w http.ResponseWriter, r *http.Request, form url.Values) {
	c, limit := readUpdateCall(form)
	a.mu.Lock()
	i := a.recordUpdateCall(c)
	answer := func(code int) { a.updateCalls[i].Status = code } // a.mu held
	if a.webhookURL != "" {
		answer(http.StatusConflict)
		a.mu.Unlock()
		fail(w, http.StatusConflict, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first")
		return
	}
	a.confirmBelow(c.Offset)
	if a.waiting != nil {
		close(a.waiting.conflict)
	}
	me := &waiter{conflict: make(chan struct{})}
	a.waiting = me
	a.mu.Unlock()

	timeout := time.After(time.Duration(c.Timeout) * time.Second)
	expired := false
	for {
		a.mu.Lock()
		out, ids := a.pendingUpTo(limit)
		if len(out) > 0 || expired {
			if a.waiting == me {
				a.waiting = nil
			}
			answer(http.StatusOK)
			a.updateCalls[i].Updates = ids
			a.mu.Unlock()
			if out == nil {
				out = []json.RawMessage{}
			}
			write(w, http.StatusOK, reply{OK: true, Result: out})
			return
		}
		if a.arrived == nil {
			a.arrived = make(chan struct{})
		}
		arrived := a.arrived
		a.mu.Unlock()
		select {
		case <-arrived:
		case <-timeout:
			expired = true
		case <-me.conflict:
			a.mu.Lock()
			answer(http.StatusConflict)
			a.mu.Unlock()
			a.t.Logf("telegramtest: getUpdates offset=%d ended by a second poll: 409", c.Offset)
			fail(w, http.StatusConflict, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running")
			return
		case <-r.Context().Done():
			a.mu.Lock()
			if a.waiting == me {
				a.waiting = nil
			}
			a.mu.Unlock()
			return
		}
	}
}

// readUpdateCall is a getUpdates call as its form asks it, and the most
// updates it takes (limit, 100 when unset or more).
func readUpdateCall(form url.Values) (UpdateCall, int) {
	c := UpdateCall{Method: "getUpdates", AllowedUpdates: allowedUpdates(form)}
	c.Offset, _ = strconv.ParseInt(form.Get("offset"), 10, 64)
	c.Timeout, _ = strconv.Atoi(form.Get("timeout"))
	c.Limit, _ = strconv.Atoi(form.Get("limit"))
	limit := c.Limit
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	return c, limit
}

// confirmBelow forgets the updates before offset, which the poller
// confirmed by asking from it (a.mu held; 0 confirms nothing).
func (a *API) confirmBelow(offset int64) {
	if offset <= 0 {
		return
	}
	kept := a.pending[:0]
	for _, p := range a.pending {
		if p.id >= offset {
			kept = append(kept, p)
		}
	}
	a.pending = kept
}

// pendingUpTo is the first limit updates not confirmed, and their ids
// (a.mu held).
func (a *API) pendingUpTo(limit int) ([]json.RawMessage, []int64) {
	var out []json.RawMessage
	var ids []int64
	for _, p := range a.pending {
		if len(out) < limit {
			out, ids = append(out, p.body), append(ids, p.id)
		}
	}
	return out, ids
}

// allowedUpdates reads allowed_updates, a JSON array of update types.
func allowedUpdates(form url.Values) []string {
	var out []string
	_ = json.Unmarshal([]byte(form.Get("allowed_updates")), &out)
	return out
}
