package main

import (
	"math"
	"os"
	"testing"
)

// The Go heap has no soft limit unless GOMEMLIMIT sets one: textslash's
// live heap under a burst (JetStream's caches and deduplication ids,
// messages in flight) is near what a small limit would be, and the
// collector then runs without pause and takes the core from the work
// (BenchmarkBurst on one core: 48% of the steady rate during a burst
// under an 80 MB limit, 85% without).
func TestNoHeapLimitUnlessGOMEMLIMIT(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set here, and textslash takes it")
	}
	inst := startServe(t)
	if limit := counter(t, inst.URL, "go_gc_gomemlimit_bytes"); limit != math.MaxInt64 {
		t.Errorf("the Go heap's soft limit is %.0f bytes; want none (GOMEMLIMIT unset)", limit)
	}
}
