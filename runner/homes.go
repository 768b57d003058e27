package runner

import (
	"os"
	"path/filepath"

	"github.com/textslash/textslash/runner/home"
	"github.com/textslash/textslash/runner/preview"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// A person's home: their sandbox kept between runs, its network, and what
// the runner keeps with it (package home).

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
	r.homes = home.New(&sandbox.Homes{Max: m, Idle: r.cfg.HomeIdle, Limited: r.limited, Dir: filepath.Join(r.cfg.Workspaces, homesDir)}, r.sweepDisks)
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

// homesDir is where, under Workspaces, the homes keep their files (the
// resolver file of their network).
const homesDir = ".homes"

// HomeStats are the numbers of the homes this runner keeps (zero when it
// keeps none).
func (r *Runner) HomeStats() sandbox.HomeStats {
	if r.homes == nil {
		return sandbox.HomeStats{}
	}
	return r.homes.Stats()
}

// hasHome reports whether the person has a home, which binds their disk.
func (r *Runner) hasHome(person string) bool { return r.homes != nil && r.homes.Has(person) }

// startPreviews starts the preview links' server when homes have networks
// of their own (home.Keeper.StartPreviews).
func (r *Runner) startPreviews() (stop func(), err error) {
	if r.homes == nil {
		r.log.Info().Msg("previews off: they need homes with a network of their own")
		return func() {}, nil
	}
	return r.homes.StartPreviews(preview.Config{Addr: r.cfg.PreviewAddr, URL: r.cfg.PreviewURL, TTL: r.cfg.PreviewTTL}, r.log)
}
