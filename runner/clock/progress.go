package clock

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/textslash/textslash/contract"
)

// Progress is a run's progress events. Each line the agent reports is
// published at once, numbered (for deduplication); a run quiet for a
// heartbeat, and not waiting for the person's answer, publishes "Still
// working (4m12s): <its last line>", at most once a heartbeat.
type Progress struct {
	heartbeat time.Duration
	start     time.Time
	publish   func(n int, line string)

	mu      sync.Mutex
	n       int       // events published
	last    time.Time // of the last line, or the last "still working"
	line    string    // the last line, which "still working" repeats
	waiting bool      // for the person's answer: no "still working"
}

// NewProgress is the progress of a run started at start, first its line
// until the agent reports one; publish publishes the nth event.
func NewProgress(heartbeat time.Duration, first string, start time.Time, publish func(n int, line string)) *Progress {
	return &Progress{heartbeat: heartbeat, start: start, publish: publish, last: start, line: first}
}

// Report publishes a line the agent reported (agent.Run.Progress).
func (p *Progress) Report(line string) {
	p.heard(line, time.Now())
	p.send(line)
}

// heard notes line, reported at now, as the run's last.
func (p *Progress) heard(line string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.line = now, strings.TrimSuffix(line, "…")
}

// Wait tells whether the run waits for the person's answer (the
// heartbeat starts anew either way).
func (p *Progress) Wait(waiting bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waiting, p.last = waiting, time.Now()
}

// Beat publishes "still working" when it is due; called every quarter of
// a heartbeat.
func (p *Progress) Beat() {
	if line, ok := p.due(time.Now()); ok {
		p.send(line)
	}
}

// due is the "still working" line due at now, if one is: the run has been
// quiet for a heartbeat and is not waiting for the person. The heartbeat
// starts anew from now.
func (p *Progress) due(now time.Time) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting || now.Sub(p.last) < p.heartbeat {
		return "", false
	}
	p.last = now
	return fmt.Sprintf("Still working (%s): %s", contract.Duration(now.Sub(p.start).Round(time.Second)), p.line), true
}

// send publishes line as the next event.
func (p *Progress) send(line string) {
	p.mu.Lock()
	p.n++
	n := p.n
	p.mu.Unlock()
	p.publish(n, line)
}
