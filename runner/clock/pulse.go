package clock

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Pulse is one ticker for what must be done now and then while it lasts:
// a run's signs of life (the job kept in hand, "still working", its
// cgroup's limits looked at), or the runner's upkeep. Each beat is called
// at its own interval, the ticker ticking at the shortest; a beat still
// busy when it is due again is skipped, and never holds up the others.
type Pulse struct {
	mu    sync.Mutex
	t     *time.Ticker // nil until the first beat
	tick  time.Duration
	beats []*beat
	quit  chan struct{}
	once  sync.Once
}

// beat is f, called every interval.
type beat struct {
	every time.Duration
	next  time.Time
	f     func()
	busy  atomic.Bool
}

// NewPulse is a pulse without beats yet.
func NewPulse() *Pulse { return &Pulse{quit: make(chan struct{})} }

// On calls f every d from now until off is called or the pulse stops.
func (p *Pulse) On(d time.Duration, f func()) (off func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b := &beat{every: d, next: time.Now().Add(d), f: f}
	p.beats = append(p.beats, b)
	off = func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.beats = slices.DeleteFunc(p.beats, func(o *beat) bool { return o == b })
	}
	switch {
	case p.t == nil:
		p.tick, p.t = d, time.NewTicker(d)
		go p.run(p.t.C)
	case d < p.tick:
		p.tick = d
		p.t.Reset(d)
	}
	return off
}

// run calls the beats due at each tick, each in a goroutine of its own.
func (p *Pulse) run(ticks <-chan time.Time) {
	for {
		select {
		case now := <-ticks:
			for _, b := range p.due(now) {
				go func() {
					defer b.busy.Store(false)
					b.f()
				}()
			}
		case <-p.quit:
			return
		}
	}
}

// due are the beats due at now, not busy, marked busy: each is then due
// again its interval later. A beat due within half a tick is due now.
func (p *Pulse) due(now time.Time) (due []*beat) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.beats {
		if now.Before(b.next.Add(-p.tick / 2)) {
			continue
		}
		if b.next = b.next.Add(b.every); b.next.Before(now) {
			b.next = now.Add(b.every)
		}
		if b.busy.CompareAndSwap(false, true) {
			due = append(due, b)
		}
	}
	return due
}

// Stop ends the pulse: no beat starts after it (one under way ends by
// itself).
func (p *Pulse) Stop() {
	p.once.Do(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.t != nil {
			p.t.Stop()
		}
		p.beats = nil
		close(p.quit)
	})
}
