package runner

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

// How many people run at once, and how many homes and warm agents are
// kept, is bounded by the memory the machine has, not by a count: agents
// spend their time waiting on the model while the CPU idles, so people
// should not wait for each other while memory is free. A run starts once
// the memory available now, less what the runs started in the last
// memoryRamp have yet to take (each its agent's cost), leaves its own
// agent's cost and MemoryFree free. While it does not, the runner lets go
// of what it keeps that nobody uses, least recently used first: a warm
// agent before its home (the next message resumes the agent's session in
// the home that stayed), then a home. The memory available is the
// machine's (MemAvailable) or, in a container or cgroup with a limit, what
// is left under it, whichever is less.

// Agents' memory, as measured (NOTES.md, docs/performance.md): a warm
// Claude Code is 200-300 MB resident; a shell run with its home's
// slirp4netns a few MB; any other command line is given room for a
// runtime of its own.
const (
	claudeMemory  = 300 << 20
	shellMemory   = 16 << 20
	commandMemory = 128 << 20
)

// memoryRamp is how long a run's memory is counted ahead, before it is
// in the machine's own numbers (a CLI's start takes about a second).
const memoryRamp = 5 * time.Second

// memoryPoll is how often a run waiting for memory looks again.
const memoryPoll = 100 * time.Millisecond

// DefaultHeld is how many jobs a runner holds at most (running or waiting
// for memory) when Concurrency leaves it to memory.
const DefaultHeld = 64

var (
	memoryWaiting = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "textslash_runs_waiting_memory",
		Help: "Runs waiting to start because the machine's memory is taken (by other runs and warm agents in use).",
	})
	memoryFreed = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "textslash_memory_freed_total",
		Help: "What the runner let go of to make room for a run: a warm agent (its home kept) or a home.",
	}, []string{"what"})
)

// memoryGate admits runs by memory, in the order they came.
type memoryGate struct {
	cost      int64                 // one run's agent's
	free      int64                 // to leave free (Config.MemoryFree)
	available func() int64          // the memory available now
	letGo     func() (string, bool) // frees something nobody uses: what, or false

	mu      sync.Mutex
	queue   []*memoryTicket
	started []time.Time // the runs' starts within memoryRamp
}

type memoryTicket struct{ ready chan struct{} }

// wait returns once there is memory for one more run (it is counted from
// then on), or ctx ends (ctx's error). told is called once, the first
// time it must wait, with how much is available.
func (g *memoryGate) wait(ctx context.Context, told func(available int64)) error {
	t := &memoryTicket{ready: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, t)
	g.mu.Unlock()
	defer g.leave(t)
	waiting := false
	defer func() {
		if waiting {
			memoryWaiting.Dec()
		}
	}()
	for {
		if g.first(t) && g.take() {
			return nil
		}
		if !waiting && g.first(t) {
			waiting = true
			memoryWaiting.Inc()
			if told != nil {
				told(g.available())
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(memoryPoll):
		}
	}
}

// first reports whether t heads the queue.
func (g *memoryGate) first(t *memoryTicket) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue) > 0 && g.queue[0] == t
}

// take counts a run in, if it fits now, making room first when it does
// not; the caller heads the queue.
func (g *memoryGate) take() bool {
	g.mu.Lock()
	now := time.Now()
	g.started = slices.DeleteFunc(g.started, func(s time.Time) bool { return now.Sub(s) >= memoryRamp })
	ahead := int64(len(g.started)) * g.cost
	fits := g.available()-ahead-g.cost >= g.free
	if fits {
		g.started = append(g.started, now)
	}
	g.mu.Unlock()
	if !fits && g.letGo != nil {
		// One thing at a time: its memory shows in the machine's
		// numbers by the next look.
		g.letGo()
	}
	return fits
}

// leave takes t out of the queue.
func (g *memoryGate) leave(t *memoryTicket) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, q := range g.queue {
		if q == t {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return
		}
	}
}

// memoryAvailable is the memory available now: the machine's
// MemAvailable, or less under the memory limit of this process's cgroup
// (a container's), where it has one.
func memoryAvailable() int64 {
	avail := meminfo("MemAvailable")
	if left, ok := cgroupLeft(); ok && left < avail {
		avail = left
	}
	return avail
}

// MemoryTotal is the machine's memory, or this process's cgroup's limit
// when that is less: what the defaults are sized from.
func MemoryTotal() int64 {
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

// costOf is the memory one run of agent takes (its home's, and its warm
// agent's).
func costOf(agent string) int64 {
	switch agent {
	case AgentClaude:
		return claudeMemory
	case AgentShell:
		return shellMemory
	}
	return commandMemory
}

// gateMemory sets the runner to start runs by memory, when Concurrency
// leaves it to memory, and says so.
func (r *Runner) gateMemory() {
	if r.cfg.Concurrency > 0 {
		r.log.Info().Int("concurrency", r.cfg.Concurrency).Msg("runs at once: a fixed count (TEXTSLASH_CONCURRENCY)")
		return
	}
	r.mem = &memoryGate{cost: costOf(r.cfg.Agent), free: r.cfg.MemoryFree, available: memoryAvailable, letGo: r.letGo}
	r.log.Info().Int64("available", memoryAvailable()).Int64("total", MemoryTotal()).Int64("left_free", r.cfg.MemoryFree).
		Int64("per_run", r.mem.cost).Str("agent", r.cfg.Agent).
		Msg("runs at once and homes kept: as many as memory allows (a run starts once its agent fits and TEXTSLASH_MEMORY_FREE stays free; unused warm agents, then homes, are let go to make room)")
}

// letGo frees what the runner keeps that nobody uses, for a run waiting
// for memory: the least recently used home's warm agent (the home stays,
// and its next message resumes the session), else the least recently
// used home. It says what it let go, or false when there is nothing.
func (r *Runner) letGo() (string, bool) {
	if r.homes == nil {
		return "", false
	}
	unused := r.homes.Unused()
	for _, h := range unused {
		r.mu.Lock()
		hs := r.kept[h.ID()]
		r.mu.Unlock()
		if hs == nil || len(hs.warm.Pids()) == 0 {
			continue
		}
		if h.IfUnused(hs.warm.Close) {
			memoryFreed.WithLabelValues("warm_agent").Inc()
			r.log.Info().Str("home", h.ID()).Msg("warm agent let go to make room for a run (its home stays)")
			return "warm agent", true
		}
	}
	for _, h := range unused {
		if r.homes.LetGo(h) {
			memoryFreed.WithLabelValues("home").Inc()
			r.log.Info().Str("home", h.ID()).Msg("home let go to make room for a run")
			return "home", true
		}
	}
	return "", false
}

// relieve lets go of unused warm agents and homes while the machine has
// less than MemoryFree available, with nobody waiting: the runner calls
// it now and then.
func (r *Runner) relieve() {
	if r.mem == nil {
		return
	}
	for range 64 {
		if memoryAvailable() >= r.cfg.MemoryFree {
			return
		}
		if _, ok := r.letGo(); !ok {
			return
		}
		time.Sleep(memoryPoll)
	}
}
