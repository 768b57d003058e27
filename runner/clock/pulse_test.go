package clock

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestPulse: one ticker calls each beat at its own interval, a shorter
// beat added later quickens it, and off and stop end the beats.
func TestPulse(t *testing.T) {
	p := NewPulse()
	defer p.Stop()
	var slow, fast atomic.Int32
	p.On(100*time.Millisecond, func() { slow.Add(1) })
	offFast := p.On(10*time.Millisecond, func() { fast.Add(1) })
	time.Sleep(350 * time.Millisecond)
	if s, f := slow.Load(), fast.Load(); s < 2 || s > 4 || f < 15 {
		t.Fatalf("in 350ms: slow beat %d times (want about 3), fast %d (want about 35)", s, f)
	}
	offFast()
	time.Sleep(20 * time.Millisecond) // one under way ends
	f := fast.Load()
	time.Sleep(100 * time.Millisecond)
	if fast.Load() != f {
		t.Fatal("an off beat was called again")
	}
	p.Stop()
	time.Sleep(20 * time.Millisecond)
	s := slow.Load()
	time.Sleep(150 * time.Millisecond)
	if slow.Load() != s {
		t.Fatal("a beat was called after stop")
	}
}

// TestPulseBusy: a beat still busy when it is due again is skipped.
func TestPulseBusy(t *testing.T) {
	p := NewPulse()
	defer p.Stop()
	var running, most atomic.Int32
	p.On(5*time.Millisecond, func() {
		n := running.Add(1)
		if n > most.Load() {
			most.Store(n)
		}
		time.Sleep(30 * time.Millisecond)
		running.Add(-1)
	})
	time.Sleep(200 * time.Millisecond)
	if most.Load() != 1 {
		t.Fatalf("a beat ran %d times at once", most.Load())
	}
}
