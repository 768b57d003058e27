package runner

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"

	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// A person's home: their sandbox kept between runs, its network, and what
// the runner keeps with it (the warm agent, the endpoint's token and task
// id its runs share). The homes themselves are sandbox.Homes.

// keepHomes keeps people's sandboxes between their runs (homes) where
// this machine allows, unless HomesMax says none.
func (r *Runner) keepHomes() {
	r.conf.Homes.Why, r.conf.Network.Why = "TEXTSLASH_HOMES_MAX=-1", "no homes"
	if r.cfg.HomesMax < 0 {
		r.log.Info().Msg("homes off: each run has a sandbox of its own")
		return
	}
	if err := sandbox.ProbeHomes(); err != nil {
		r.conf.Homes.Why = err.Error()
		r.log.Warn().Err(err).Msg("homes off: each run has a sandbox of its own (slower, and on the host's network)")
		return
	}
	r.conf.Homes = sandbox.Part{On: true}
	m := r.cfg.HomesMax
	r.homes = &sandbox.Homes{Max: m, Idle: r.cfg.HomeIdle, Limited: r.limited, Dir: filepath.Join(r.cfg.Workspaces, homesDir), OnClose: r.homeClosed}
	r.kept = map[string]*homeState{}
	if err := netns.Probe(netns.Options{}); err != nil {
		r.conf.Network.Why = err.Error()
		r.log.Error().Err(err).Msg("homes share the host's network: a person's agent can reach the web chat, NATS and other people's servers on this machine's loopback")
	} else if err := os.MkdirAll(r.homes.Dir, 0o755); err != nil {
		r.conf.Network.Why = err.Error()
		r.log.Error().Err(err).Msg("homes share the host's network: their directory cannot be made")
	} else {
		r.homes.Network = &netns.Options{RefuseHost: true}
		r.conf.Network = sandbox.Part{On: true}
	}
	r.log.Info().Int("max", m).Int("open_files_bound", r.homes.FileBound()).Dur("idle_ms", r.cfg.HomeIdle).
		Msg("homes kept: a person's sandbox is made once and kept between their runs (max 0: as many as memory allows), and no more than the open-file limit has room for (open_files_bound; ulimit -n raises it)")
}

// keptFor is what the runner keeps with home id, person's, made at its
// first run.
func (r *Runner) keptFor(id, person string) *homeState {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs := r.kept[id]
	if hs == nil {
		hs = &homeState{warm: &agent.Warm{}, token: handover.NewToken(), task: "home-" + id, person: person}
		r.kept[id] = hs
	}
	return hs
}

// hasHome reports whether the person has a home, which binds their disk.
func (r *Runner) hasHome(person string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, hs := range r.kept {
		if hs.person == person {
			return true
		}
	}
	return false
}

// homeClosed lets go of what the runner kept with home id: its warm agent
// ends before the home is taken down.
func (r *Runner) homeClosed(id string) {
	r.mu.Lock()
	hs := r.kept[id]
	delete(r.kept, id)
	r.mu.Unlock()
	if hs != nil {
		hs.warm.Close()
	}
	if r.previews != nil {
		r.previews.HomeGone(id)
	}
	go r.sweepDisks()
}

// homesDir is where, under Workspaces, the homes keep their files (the
// resolver file of their network).
const homesDir = ".homes"

// forwardIntoHomes lets homes, which have a network of their own, reach
// the host's loopback addresses runs use: the screenshot endpoint, and the
// model API or an HTTP proxy when the operator runs them on loopback
// (ANTHROPIC_BASE_URL, HTTPS_PROXY, HTTP_PROXY). Nothing else there.
func (r *Runner) forwardIntoHomes() {
	if r.homes == nil || r.homes.Network == nil {
		return
	}
	addrs := []string{r.shots.Addr()}
	// The model APIs' base URLs the agents read (Claude Code's, Gemini
	// CLI's, OpenAI's), and proxies.
	for _, v := range []string{"ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "OPENAI_BASE_URL", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if a := netns.LoopbackAddr(os.Getenv(v)); a != "" {
			addrs = append(addrs, a)
		}
	}
	for _, a := range addrs {
		if ap, err := netip.ParseAddrPort(a); err == nil && ap.Addr().IsLoopback() && !slices.Contains(r.homes.Network.Forward, a) {
			r.homes.Network.Forward = append(r.homes.Network.Forward, a)
		}
	}
	r.log.Info().Strs("forward", r.homes.Network.Forward).Msg("homes have a network of their own; these host loopback addresses are reachable from them")
}

// HomeStats are the numbers of the homes this runner keeps (zero when it
// keeps none).
func (r *Runner) HomeStats() sandbox.HomeStats {
	if r.homes == nil {
		return sandbox.HomeStats{}
	}
	return r.homes.Stats()
}
