package runner

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/memory"
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

// DefaultHeld is how many jobs a runner holds at most (running or waiting
// for memory) when Concurrency leaves it to memory.
const DefaultHeld = 64

var memoryFreed = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "textslash_memory_freed_total",
	Help: "What the runner let go of to make room for a run: a warm agent (its home kept) or a home.",
}, []string{"what"})

// costOf is the memory one run of agent takes (its home's, and its warm
// agent's).
func costOf(agent string) int64 {
	switch {
	case agent == AgentClaude, contract.IsACPAgent(agent):
		// An ACP agent is counted as Claude Code is until measured for
		// itself (opencode's idle process was seen at 500–640 MB).
		return claudeMemory
	case agent == AgentShell:
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
	r.mem = &memory.Gate{Cost: costOf(r.cfg.Agent), Free: r.cfg.MemoryFree, Available: memory.Available, LetGo: r.letGo}
	r.log.Info().Int64("available", memory.Available()).Int64("total", memory.Total()).Int64("left_free", r.cfg.MemoryFree).
		Int64("per_run", r.mem.Cost).Str("agent", r.cfg.Agent).
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
		hs := r.homes.Kept(h.ID())
		if hs == nil || len(hs.Warm.Pids()) == 0 {
			continue
		}
		if h.IfUnused(hs.Warm.Close) {
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
		if memory.Available() >= r.cfg.MemoryFree {
			return
		}
		if _, ok := r.letGo(); !ok {
			return
		}
		time.Sleep(memory.Poll)
	}
}
