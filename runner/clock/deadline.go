package clock

import (
	"sync"
	"time"
)

// Deadline is a run's time limit, which stops while the run waits for the
// person: an agent's time is its own work, not the person's thinking.
type Deadline struct {
	mu     sync.Mutex
	t      *time.Timer
	left   time.Duration
	since  time.Time
	paused int
}

// NewDeadline calls reached once d has passed, not counting the time it
// was paused.
func NewDeadline(d time.Duration, reached func()) *Deadline {
	dl := &Deadline{left: d, since: time.Now()}
	dl.t = time.AfterFunc(d, reached)
	return dl
}

// Pause stops the clock until Resume; pauses nest.
func (d *Deadline) Pause() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.paused++; d.paused == 1 && d.t.Stop() {
		d.left -= time.Since(d.since)
	}
}

// Resume starts the clock again after the last Pause.
func (d *Deadline) Resume() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.paused--; d.paused == 0 {
		d.since = time.Now()
		d.t.Reset(max(d.left, 0))
	}
}

// Stop ends the clock: the deadline is not reached.
func (d *Deadline) Stop() { d.t.Stop() }
