// Inbound media: AddMedia stores an attachment, which the fake serves at
// a Twilio-shaped URL behind basic auth.

package twiliotest

import (
	"fmt"
	"net/http"
	"strconv"
)

type media struct {
	contentType string
	data        []byte
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
