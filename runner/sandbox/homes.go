package sandbox

import (
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// Defaults of Homes.
const (
	// DefaultHomeIdle is how long a home is kept after its last run.
	DefaultHomeIdle = 10 * time.Minute
)

// Homes keeps the homes of the people running now and lately: one per
// sandbox (a person, and their project where the agent's directory
// differs), made at its first run, let go after Idle without a run, when
// more than Max are kept, or more than the open-file limit has room for
// (FileBound; the least recently used first, never one a run is in), or
// when the runner needs their memory (LetGo).
type Homes struct {
	// Idle: see DefaultHomeIdle. Max, when above 0, is the most homes kept
	// at once; 0 bounds them by memory alone (the runner's LetGo).
	Idle time.Duration
	Max  int
	// Network, when set, gives each home a network of its own
	// (slirp4netns: outbound connections, nothing of the host's loopback
	// but Network.Forward, none of the host's own addresses); nil leaves
	// homes on the host's network. Needs Dir, where the homes' resolver
	// file is written.
	Network *netns.Options
	Dir     string
	// Limited: homes get a cgroup with their sandbox's limits.
	Limited bool
	// OnClose, when set, is told of each home taken down (its id), so
	// what the runner keeps for it (the warm agent) goes too.
	OnClose func(id string)

	mu      sync.Mutex
	homes   map[string]*Home // by key
	files   int              // FileBound, once known
	netCfg  *homeNet
	closing sync.WaitGroup // homes let go, being taken down

	starts, reuses atomic.Int64
}

// Enter is the home for a run of box in dir with home and bin, as u,
// made when there is none (or the one there ended); leave, called when
// the run ends, ends what the run left running in it.
func (hs *Homes) Enter(box *Sandbox, dir, home, bin string, u *User, log zerolog.Logger) (h *Home, leave func(), err error) {
	key := homeKey(box, dir, home, bin, u, hs.Network != nil)
	hs.mu.Lock()
	if hs.homes == nil {
		hs.homes = map[string]*Home{}
	}
	h = hs.homes[key]
	if h != nil && !h.Alive() {
		log.Warn().Str("home", h.id).Msg("home ended by itself; making it again")
		delete(hs.homes, key)
		hs.closing.Go(func() { hs.closed(h) })
		h = nil
	}
	if h != nil {
		h.mu.Lock()
		h.users++
		h.mu.Unlock()
		hs.mu.Unlock()
		hs.reuses.Add(1)
		return h, func() { hs.leave(h) }, nil
	}
	net, err := hs.net()
	hs.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	t0 := time.Now()
	if h, err = startHome(box, dir, home, bin, u, hs.Limited, net, log); err != nil {
		return nil, nil, err
	}
	hs.starts.Add(1)
	log.Info().Str("home", h.id).Dur("took_ms", time.Since(t0)).Msg("home made")
	h.users = 1
	hs.mu.Lock()
	if old := hs.homes[key]; old != nil {
		// Another run of the same sandbox made one meanwhile (runs of one
		// person are one at a time, so this is rare): keep both apart.
		key += "\x00" + h.id
	}
	hs.homes[key] = h
	evict := hs.overLocked()
	hs.mu.Unlock()
	for _, e := range evict {
		log.Info().Str("home", e.id).Msg("home let go: too many kept")
		hs.closing.Go(func() { hs.closed(e) }) // not in the way of the run that made a home
	}
	return h, func() { hs.leave(h) }, nil
}

// net is how homes are networked, nil on the host's network; the
// resolver file is written at first use. hs.mu is held.
func (hs *Homes) net() (*homeNet, error) {
	if hs.Network == nil {
		return nil, nil
	}
	if hs.netCfg == nil {
		resolv, err := netns.ResolvConf(hs.Dir)
		if err != nil {
			return nil, fmt.Errorf("homes' resolver: %w", err)
		}
		hs.netCfg = &homeNet{o: *hs.Network, resolv: resolv}
	}
	return hs.netCfg, nil
}

// leave ends a run's time in h.
func (hs *Homes) leave(h *Home) {
	h.EndRun()
	h.mu.Lock()
	h.users--
	h.last = time.Now()
	h.mu.Unlock()
}

// overLocked takes out of the map the least recently used idle homes past
// Max, for the caller to close.
func (hs *Homes) overLocked() []*Home {
	max := hs.fileBoundLocked()
	if hs.Max > 0 {
		max = min(max, hs.Max)
	}
	var out []*Home
	for len(hs.homes) > max {
		var lru *Home
		var lruKey string
		for k, h := range hs.homes {
			h.mu.Lock()
			idle, last := h.users == 0, h.last
			h.mu.Unlock()
			if idle && (lru == nil || last.Before(lru.last)) {
				lru, lruKey = h, k
			}
		}
		if lru == nil {
			break // every home has a run in it
		}
		delete(hs.homes, lruKey)
		out = append(out, lru)
	}
	return out
}

// Count is how many homes are kept now.
func (hs *Homes) Count() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return len(hs.homes)
}

// FileBound is the most homes this process's open-file limit has room
// for (fileRoom), as it was when Homes was first used.
func (hs *Homes) FileBound() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.fileBoundLocked()
}

// fileBoundLocked is FileBound; hs.mu is held.
func (hs *Homes) fileBoundLocked() int {
	if hs.files == 0 {
		hs.files = fileRoom()
	}
	return hs.files
}

// Unused are the homes no run is in, the least recently used first.
func (hs *Homes) Unused() []*Home {
	hs.mu.Lock()
	var idle []*Home
	for _, h := range hs.homes {
		h.mu.Lock()
		if h.users == 0 {
			idle = append(idle, h)
		}
		h.mu.Unlock()
	}
	hs.mu.Unlock()
	slices.SortFunc(idle, func(a, b *Home) int {
		a.mu.Lock()
		la := a.last
		a.mu.Unlock()
		b.mu.Lock()
		defer b.mu.Unlock()
		return la.Compare(b.last)
	})
	return idle
}

// LetGo takes h down, if it is still kept and no run came to it
// meanwhile, and reports whether it did.
func (hs *Homes) LetGo(h *Home) bool {
	hs.mu.Lock()
	var key string
	for k, kept := range hs.homes {
		if kept == h {
			key = k
		}
	}
	h.mu.Lock()
	idle := h.users == 0
	h.mu.Unlock()
	if key == "" || !idle {
		hs.mu.Unlock()
		return false
	}
	delete(hs.homes, key)
	hs.mu.Unlock()
	hs.closed(h)
	return true
}

// closed takes h down and tells OnClose.
func (hs *Homes) closed(h *Home) {
	if hs.OnClose != nil {
		hs.OnClose(h.id)
	}
	h.Close()
}

// Sweep lets go of the homes idle for longer than Idle; the runner calls
// it now and then.
func (hs *Homes) Sweep(log zerolog.Logger) {
	idle := hs.Idle
	if idle <= 0 {
		idle = DefaultHomeIdle
	}
	hs.mu.Lock()
	var out []*Home
	for k, h := range hs.homes {
		h.mu.Lock()
		gone := (h.users == 0 && time.Since(h.last) > idle) || !h.Alive()
		h.mu.Unlock()
		if gone {
			delete(hs.homes, k)
			out = append(out, h)
		}
	}
	hs.mu.Unlock()
	for _, h := range out {
		log.Info().Str("home", h.id).Msg("home let go: idle")
		hs.closed(h)
	}
}

// Close takes every home down.
func (hs *Homes) Close() {
	hs.mu.Lock()
	all := slices.Collect(func(yield func(*Home) bool) {
		for _, h := range hs.homes {
			if !yield(h) {
				return
			}
		}
	})
	hs.homes = nil
	hs.mu.Unlock()
	for _, h := range all {
		hs.closed(h)
	}
	hs.closing.Wait()
}

// HomeStats are the homes' numbers for /metrics.
type HomeStats struct {
	Warm          int   // homes kept now
	Memory        int64 // bytes their processes hold
	Starts, Reuse int64 // runs that made a home, runs that found one
}

// Stats are the homes' numbers now.
func (hs *Homes) Stats() HomeStats {
	hs.mu.Lock()
	all := make([]*Home, 0, len(hs.homes))
	for _, h := range hs.homes {
		all = append(all, h)
	}
	hs.mu.Unlock()
	st := HomeStats{Warm: len(all), Starts: hs.starts.Load(), Reuse: hs.reuses.Load()}
	for _, h := range all {
		st.Memory += h.Memory()
	}
	return st
}

// ProbeHomes says whether homes can be kept here: nsenter is there
// (bubblewrap working, which homes need too, is Sandbox.Probe's). Root or
// not: without root, a home is entered through the user namespace
// bubblewrap nests it in (enter.go).
func ProbeHomes() error {
	if _, err := exec.LookPath("nsenter"); err != nil {
		return fmt.Errorf("%w: nsenter not found (apt install util-linux)", ErrNoHome)
	}
	return nil
}
