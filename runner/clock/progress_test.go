package clock

import (
	"slices"
	"testing"
	"time"
)

// "Still working" comes after a heartbeat without a line, names the
// run's last line, and comes again only after another quiet heartbeat;
// none comes while the run waits for the person's answer.
func TestProgressHeartbeat(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var sent []string
	p := NewProgress(time.Minute, "“fix it”", start, func(n int, line string) {
		if n != len(sent)+1 {
			t.Errorf("event %d after %d events; want them numbered in order", n, len(sent))
		}
		sent = append(sent, line)
	})
	at := func(d time.Duration) time.Time { return start.Add(d) }
	steps := []struct {
		at   time.Duration
		want string // "": none due
	}{
		{30 * time.Second, ""},
		{time.Minute, "Still working (1m): “fix it”"},
		{90 * time.Second, ""},
		{2*time.Minute + 10*time.Second, "Still working (2m 10s): “fix it”"},
	}
	for _, s := range steps {
		got, ok := p.due(at(s.at))
		if ok != (s.want != "") || got != s.want {
			t.Errorf("at %v: due %q, %t; want %q", s.at, got, ok, s.want)
		}
	}
	p.heard("Running `npm test`…", at(3*time.Minute))
	if got, ok := p.due(at(3*time.Minute + 59*time.Second)); ok {
		t.Errorf("a heartbeat after a line: due %q; want none yet", got)
	}
	if got, _ := p.due(at(4 * time.Minute)); got != "Still working (4m): Running `npm test`" {
		t.Errorf("due %q; want the last line, without its ellipsis", got)
	}
	p.Wait(true)
	if got, ok := p.due(time.Now().Add(time.Hour)); ok {
		t.Errorf("waiting for the person: due %q; want none", got)
	}
	p.Wait(false)
	p.send("one")
	p.send("two")
	if want := []string{"one", "two"}; !slices.Equal(sent, want) {
		t.Errorf("sent %q; want %q", sent, want)
	}
}
