package app

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/natstest"
)

// The ready line names its units: cold_start_ms, not a bare cold_start
// of 270.69.
func TestReadyLineNamesItsUnits(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out bytes.Buffer
	cfg := config{Services: All}
	cfg.logReady(zerolog.New(&out), ln, nil, time.Now().Add(-270*time.Millisecond))
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%s: %v", out.String(), err)
	}
	if ms, ok := line["cold_start_ms"].(float64); !ok || ms < 270 {
		t.Errorf("ready line %s; want cold_start_ms of at least 270", out.String())
	}
	if _, ok := line["cold_start"]; ok {
		t.Errorf("ready line %s has a cold_start without its unit", out.String())
	}
}

// The ready line's web chat URL carries the token only where the token is
// required: on loopback alone the plain URL opens the chat.
func TestReadyLineTokenOnlyWhereRequired(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		name string
		cfg  config
		want string
	}{
		{"loopback", config{Host: "127.0.0.1", Web: true, WebToken: "s3cret"}, "http://localhost:" + port + "/"},
		{"PUBLIC_URL", config{Host: "127.0.0.1", Web: true, WebToken: "s3cret", PublicURL: "https://chat.example.com"},
			"http://localhost:" + port + "/?token=s3cret"},
	} {
		var out bytes.Buffer
		tc.cfg.Services = All
		tc.cfg.logReady(zerolog.New(&out), ln, nil, time.Now())
		var line struct {
			WebChat string `json:"web_chat"`
		}
		if err := json.Unmarshal(out.Bytes(), &line); err != nil || line.WebChat != tc.want {
			t.Errorf("%s: web_chat %q (%v); want %q", tc.name, line.WebChat, err, tc.want)
		}
	}
}

// /readyz says ready only once the process has logged "textslash ready":
// until then its services are still starting, whatever NATS says, and a
// probe (or a script reading the ready line for the web chat's URL) that
// trusted it would act too early.
func TestReadyzWaitsForReadyLine(t *testing.T) {
	ns := natstest.RunJetStream(t)
	cfg := config{Host: "127.0.0.1"}
	var ready atomic.Bool
	mux := cfg.mux(nil, ns.NC, ns.JS, &ready, zerolog.Nop())
	probe := func() int {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/readyz", nil))
		return rec.Code
	}
	if code := probe(); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the ready line: %d; want 503", code)
	}
	ready.Store(true)
	if code := probe(); code != http.StatusOK {
		t.Errorf("/readyz after the ready line: %d; want 200", code)
	}
}

// The process is ready once every part is: the runner says "runner ready"
// after "textslash ready" was logged, its homes' network set up after it,
// and a test (or a probe) that trusted /readyz found neither (CI:
// TestSandboxIsolation/normal_user). A part that fails first ends the wait.
func TestReadyAwaitsEveryPart(t *testing.T) {
	late := make(chan struct{})
	parts := []part{{}, {ready: late}}
	done := make(chan error, 1)
	go func() { done <- awaitParts(t.Context(), parts) }()
	select {
	case err := <-done:
		t.Fatalf("ready before the late part: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(late)
	if err := <-done; err != nil {
		t.Errorf("once every part is ready: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := awaitParts(ctx, []part{{ready: make(chan struct{})}}); err == nil {
		t.Errorf("a part that never readies, the process stopping: no error")
	}
}
