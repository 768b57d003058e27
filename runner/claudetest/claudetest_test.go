package claudetest

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// Each request carries when it arrived: after the client sent it, before
// the client had the answer.
func TestRequestArrivalTime(t *testing.T) {
	m := NewModel(t, Text("one"), Text("two"))
	var sent, answered []time.Time
	for range 2 {
		body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash"}]}`
		sent = append(sent, time.Now())
		resp, err := http.Post(m.URL()+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		answered = append(answered, time.Now())
	}
	reqs := m.MainRequests()
	if len(reqs) != 2 {
		t.Fatalf("got %d main requests; want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.At.Before(sent[i]) || r.At.After(answered[i]) {
			t.Errorf("request %d: At %v; want between its send %v and its answer %v", i, r.At, sent[i], answered[i])
		}
	}
}
