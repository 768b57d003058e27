package twiliotest

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestWithoutCallbacks checks that no callback is even scheduled, which a
// test of the exported API could only show by waiting.
func TestWithoutCallbacks(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
		want int
	}{
		{"default", nil, 1},
		{"WithoutCallbacks", []Option{WithoutCallbacks()}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := NewAPI(t, c.opts...)
			form := url.Values{"To": {"+1555"}, "From": {"+1444"}, "Body": {"hi"},
				"StatusCallback": {"http://127.0.0.1:1/status"}}
			req, _ := http.NewRequest(http.MethodPost, a.URL+"/2010-04-01/Accounts/"+a.AccountSID+"/Messages.json",
				strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(a.AccountSID, a.AuthToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("create: %s; want 201", resp.Status)
			}
			a.mu.Lock()
			got := a.scheduled
			a.mu.Unlock()
			if got != c.want {
				t.Errorf("%d messages had callbacks scheduled; want %d", got, c.want)
			}
		})
	}
}
