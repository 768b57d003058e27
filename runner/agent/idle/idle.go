// Package idle stops a warm agent's processes while it waits for its
// person's next message, and continues them when the message comes: an
// idle Claude Code spends 15–25 ms of CPU a second on timers of its own
// (BenchmarkFollowUp/homes), which a machine of warm homes paid for
// nobody. Stopped (SIGSTOP to their process groups), the processes keep
// their memory and their state; continued (SIGCONT), they go on as if
// nothing happened, their overdue timers first.
package idle

import (
	"sync"
	"syscall"
	"time"
)

// Rest is the pause of one warm agent's process groups. The zero value
// is ready to use.
type Rest struct {
	mu      sync.Mutex
	timer   *time.Timer
	stopped []int
}

// Arm stops, d from now, the process groups take gives. take returns nil
// release when nothing may be stopped now (a run has the agent); else
// the groups are stopped before release is called, which lets the
// agent's owner hold off anything that would reach the agent (a Close)
// until they are, and Wake then continues them.
func (r *Rest) Arm(d time.Duration, take func() (groups []int, release func())) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
	}
	r.timer = time.AfterFunc(d, func() {
		groups, release := take()
		if release == nil {
			return
		}
		defer release()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, g := range groups {
			if syscall.Kill(-g, syscall.SIGSTOP) == nil {
				r.stopped = append(r.stopped, g)
			}
		}
	})
}

// Wake disarms r and continues the groups it stopped: before anything
// reaches the agent.
func (r *Rest) Wake() {
	r.mu.Lock()
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	stopped := r.stopped
	r.stopped = nil
	r.mu.Unlock()
	for _, g := range stopped {
		_ = syscall.Kill(-g, syscall.SIGCONT)
	}
}
