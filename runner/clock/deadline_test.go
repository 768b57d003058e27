package clock

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestDeadline: the time paused does not count, and a deadline stopped is
// not reached.
func TestDeadline(t *testing.T) {
	var reached atomic.Bool
	d := NewDeadline(100*time.Millisecond, func() { reached.Store(true) })
	time.Sleep(50 * time.Millisecond)
	d.Pause()
	time.Sleep(150 * time.Millisecond)
	if reached.Load() {
		t.Fatal("reached while paused")
	}
	d.Resume()
	time.Sleep(20 * time.Millisecond)
	if reached.Load() {
		t.Fatal("reached before its time, not counting the pause")
	}
	time.Sleep(80 * time.Millisecond)
	if !reached.Load() {
		t.Fatal("not reached after its time")
	}
	var stopped atomic.Bool
	s := NewDeadline(20*time.Millisecond, func() { stopped.Store(true) })
	s.Stop()
	time.Sleep(50 * time.Millisecond)
	if stopped.Load() {
		t.Fatal("a stopped deadline was reached")
	}
}
