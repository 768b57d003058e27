package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// logLine is one JSON line of an instance's log.
type logLine map[string]any

func (l logLine) str(field string) string { s, _ := l[field].(string); return s }

// readLog reads the JSON lines of a log, skipping any that are not JSON.
func readLog(t *testing.T, path string) []logLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			out = append(out, l)
		}
	}
	return out
}

// inboundTrace is the trace id ingress logged for message id.
func inboundTrace(t *testing.T, ingressLog, id string) string {
	t.Helper()
	for _, l := range readLog(t, ingressLog) {
		if l.str("svc") == "ingress" && l.str("message") == "inbound" && l.str("job_id") == id {
			if trace := l.str(contract.LogTrace); trace != "" {
				return trace
			}
		}
	}
	t.Fatalf("ingress logged no trace for message %s", id)
	return ""
}

// traceFollows waits until the log at path has, for each service named in
// want, lines with trace saying each of its messages.
func traceFollows(t *testing.T, path, trace string, want map[string][]string) {
	t.Helper()
	natstest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		seen := map[string][]string{}
		for _, l := range readLog(t, path) {
			if l.str(contract.LogTrace) == trace {
				seen[l.str("svc")] = append(seen[l.str("svc")], l.str("message"))
			}
		}
		for svc, msgs := range want {
			for _, m := range msgs {
				if !slices.Contains(seen[svc], m) {
					return fmt.Errorf("%s logged no %q with trace %s (it logged %q with it)", svc, m, trace, seen[svc])
				}
			}
		}
		return nil
	})
}
