package natstest

import (
	"bytes"
	"encoding/json"
	"sync"
	"testing"
)

// Logs collects a service's JSON log lines (zerolog.New(&logs)), written
// from any goroutine, for a test to look up.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Find returns the lines logged so far whose message is msg and whose
// fields include want's.
func (l *Logs) Find(t testing.TB, msg string, want map[string]string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, raw := range bytes.Split(bytes.TrimSpace(l.buf.Bytes()), []byte("\n")) {
		if len(raw) == 0 {
			continue
		}
		var line map[string]any
		if err := json.Unmarshal(raw, &line); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		match := line["message"] == msg
		for k, v := range want {
			match = match && line[k] == v
		}
		if match {
			out = append(out, line)
		}
	}
	return out
}
