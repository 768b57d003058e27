// Package memory admits runs by the memory the machine has: a Gate lets
// a run start once the memory available, less what the runs started in
// the last Ramp have yet to take, leaves one more run's cost and a margin
// free, in the order the runs came, asking its owner to let go of
// something nobody uses while it does not; Available and Total read the
// machine's memory, or its cgroup's (a container's) where that is less.
package memory

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Ramp is how long a run's memory is counted ahead, before it is in the
// machine's own numbers (a CLI's start takes about a second).
const Ramp = 5 * time.Second

// Poll is how often a run waiting for memory looks again.
const Poll = 100 * time.Millisecond

// Fresh is how long a look at the machine's memory serves the runs that
// come after it: a look reads five files of /proc and /sys (a twentieth
// of the runner's CPU when each run looked), and what the runs taken
// meanwhile will use is counted ahead all the same. Shorter than Poll, so
// a run waiting for room looks anew each time.
const Fresh = Poll / 2

var waitingRuns = promauto.NewGauge(prometheus.GaugeOpts{
	Name: "textslash_runs_waiting_memory",
	Help: "Runs waiting to start because the machine's memory is taken (by other runs and warm agents in use).",
})

// Gate admits runs by memory, in the order they came.
type Gate struct {
	Cost      int64                 // one run's
	Free      int64                 // to leave free
	Available func() int64          // the memory available now
	LetGo     func() (string, bool) // frees something nobody uses: what, or false

	mu      sync.Mutex
	queue   []*ticket
	started []time.Time // the runs' starts within memoryRamp
	seen    int64       // Available's at looked, for Fresh
	looked  time.Time
}

type ticket struct{ ready chan struct{} }

// Wait returns once there is memory for one more run (it is counted from
// then on), or ctx ends (ctx's error). told is called once, the first
// time it must wait, with how much is available.
func (g *Gate) Wait(ctx context.Context, told func(available int64)) error {
	t := &ticket{ready: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, t)
	g.mu.Unlock()
	defer g.leave(t)
	waiting := false
	defer func() {
		if waiting {
			waitingRuns.Dec()
		}
	}()
	for {
		if g.first(t) && g.take() {
			return nil
		}
		if !waiting && g.first(t) {
			waiting = true
			waitingRuns.Inc()
			if told != nil {
				g.mu.Lock()
				avail := g.look(time.Now())
				g.mu.Unlock()
				told(avail)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(Poll):
		}
	}
}

// first reports whether t heads the queue.
func (g *Gate) first(t *ticket) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue) > 0 && g.queue[0] == t
}

// take counts a run in, if it fits now, making room first when it does
// not; the caller heads the queue.
func (g *Gate) take() bool {
	g.mu.Lock()
	fits := g.countIn()
	g.mu.Unlock()
	if !fits && g.LetGo != nil {
		// One thing at a time: its memory shows in the machine's
		// numbers by the next look.
		if _, ok := g.LetGo(); ok {
			g.mu.Lock()
			g.looked = time.Time{}
			g.mu.Unlock()
		}
	}
	return fits
}

// TryTake counts one more in, and reports true, if it fits now and no
// run waits: for work nobody asked for yet (the homes made again after a
// restart), which must neither go before a run nor make room by letting
// go of what someone used.
func (g *Gate) TryTake() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue) == 0 && g.countIn()
}

// countIn counts one more in if it fits now; g.mu is held.
func (g *Gate) countIn() bool {
	now := time.Now()
	g.started = slices.DeleteFunc(g.started, func(s time.Time) bool { return now.Sub(s) >= Ramp })
	ahead := int64(len(g.started)) * g.Cost
	if g.look(now)-ahead-g.Cost < g.Free {
		return false
	}
	g.started = append(g.started, now)
	return true
}

// look is the memory available now, read again once Fresh has passed
// since the last look; g.mu is held.
func (g *Gate) look(now time.Time) int64 {
	if g.looked.IsZero() || now.Sub(g.looked) >= Fresh {
		g.seen, g.looked = g.Available(), now
	}
	return g.seen
}

// leave takes t out of the queue.
func (g *Gate) leave(t *ticket) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, q := range g.queue {
		if q == t {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return
		}
	}
}

// Available is the memory available now: the machine's
// MemAvailable, or less under the memory limit of this process's cgroup
// (a container's), where it has one.
func Available() int64 {
	avail := meminfo("MemAvailable")
	if left, ok := cgroupLeft(); ok && left < avail {
		avail = left
	}
	return avail
}

// Total is the machine's memory, or this process's cgroup's limit
// when that is less: what the defaults are sized from.
func Total() int64 {
	total := meminfo("MemTotal")
	if limit, _, ok := cgroupMemory(); ok && limit < total {
		total = limit
	}
	return total
}

// meminfo is a field of /proc/meminfo, in bytes (0 when unreadable).
func meminfo(field string) int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		kb, _ := strconv.ParseInt(f[0], 10, 64)
		return kb << 10
	}
	return 0
}

// cgroupLeft is what is left under this process's cgroup's memory limit,
// its reclaimable page cache counted as free; false without a limit.
func cgroupLeft() (int64, bool) {
	limit, used, ok := cgroupMemory()
	if !ok {
		return 0, false
	}
	return max(limit-used, 0), true
}

// cgroupMemory is this process's cgroup's memory limit and what it uses
// (less its inactive page cache), v2 or v1; false when it has no limit.
func cgroupMemory() (limit, used int64, ok bool) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, limitFile, usageFile, inactive string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir = filepath.Join("/sys/fs/cgroup", parts[2])
			limitFile, usageFile, inactive = "memory.max", "memory.current", "inactive_file"
		case strings.Contains(","+parts[1]+",", ",memory,"):
			dir = filepath.Join("/sys/fs/cgroup/memory", parts[2])
			limitFile, usageFile, inactive = "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
		default:
			continue
		}
		l, err := readInt(filepath.Join(dir, limitFile))
		if err != nil || l <= 0 || l >= 1<<60 {
			continue // "max", or v1's page-rounded "no limit"
		}
		u, err := readInt(filepath.Join(dir, usageFile))
		if err != nil {
			continue
		}
		u -= statField(filepath.Join(dir, "memory.stat"), inactive)
		return l, max(u, 0), true
	}
	return 0, 0, false
}

func readInt(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

// statField is a field of a cgroup's memory.stat (0 when absent).
func statField(path, field string) int64 {
	data, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(data), "\n") {
		if name, v, ok := strings.Cut(line, " "); ok && name == field {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
