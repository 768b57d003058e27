package app

import (
	"bytes"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
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
