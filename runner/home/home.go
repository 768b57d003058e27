// Package home keeps people's homes between their runs: their sandboxes
// (sandbox.Homes, which Keeper is), what the runner keeps with each (the
// warm agent, the screenshot endpoint's token and the task id its runs
// share), and the preview links into them (package preview).
package home

import (
	"net/netip"
	"os"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/preview"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// Keeper is the homes a runner keeps, and what it keeps with each.
type Keeper struct {
	*sandbox.Homes
	// gone is told that a home was let go (the disks it bound may be
	// swept).
	gone func()

	mu       sync.Mutex
	kept     map[string]*State // by home id
	previews *preview.Server   // the preview links' server, while previews are on; nil: none
}

// State is what the runner keeps with a home: its warm agent, and the
// endpoint's token and the task id its runs share (the agent kept warm
// there keeps the environment it was started with).
type State struct {
	Warm        *agent.Warm
	Token, Task string
	Person      string // the person's key: their disk is bound in the home
	home        *sandbox.Home
}

// New keeps homes, telling gone each time one is let go.
func New(homes *sandbox.Homes, gone func()) *Keeper {
	k := &Keeper{Homes: homes, gone: gone, kept: map[string]*State{}}
	homes.OnClose = k.closed
	return k
}

// For is what the runner keeps with home id, person's, made at its first
// run.
func (k *Keeper) For(id, person string) *State {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.kept[id]
	if st == nil {
		st = &State{Warm: &agent.Warm{}, Token: handover.NewToken(), Task: "home-" + id, Person: person}
		k.kept[id] = st
	}
	return st
}

// Entered notes that a run entered st's home h.
func (k *Keeper) Entered(st *State, h *sandbox.Home) {
	k.mu.Lock()
	defer k.mu.Unlock()
	st.home = h
}

// Home is st's home, once a run entered it.
func (k *Keeper) Home(st *State) *sandbox.Home {
	k.mu.Lock()
	defer k.mu.Unlock()
	return st.home
}

// Kept is what the runner keeps with home id, nil when nothing.
func (k *Keeper) Kept(id string) *State {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.kept[id]
}

// Has reports whether the person has a home, which binds their disk.
func (k *Keeper) Has(person string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, st := range k.kept {
		if st.Person == person {
			return true
		}
	}
	return false
}

// Of is person's home, nil when they have none (or no homes are kept: k
// nil).
func (k *Keeper) Of(person string) *sandbox.Home {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, st := range k.kept {
		if st.Person == person && st.home != nil && st.home.Alive() {
			return st.home
		}
	}
	return nil
}

// Wake continues the person's warm agents, stopped while idle (agent.Warm
// pauses them), as their message arrives: what the agent does on waking
// (timers overdue, tens of ms) goes on while the runner readies the run.
// k nil: no homes are kept.
func (k *Keeper) Wake(person string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	var warm []*agent.Warm
	for _, st := range k.kept {
		if st.Person == person {
			warm = append(warm, st.Warm)
		}
	}
	k.mu.Unlock()
	for _, w := range warm {
		w.Wake()
	}
}

// WarmAgents is how many homes have a warm agent running.
func (k *Keeper) WarmAgents() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, st := range k.kept {
		if len(st.Warm.Pids()) > 0 {
			n++
		}
	}
	return n
}

// closed lets go of what the runner kept with home id: its warm agent
// ends before the home is taken down, its links with it.
func (k *Keeper) closed(id string) {
	k.mu.Lock()
	st := k.kept[id]
	delete(k.kept, id)
	p := k.previews
	k.mu.Unlock()
	if st != nil {
		st.Warm.Close()
	}
	if p != nil {
		p.HomeGone(id)
	}
	go k.gone()
}

// Forward lets homes, which have a network of their own, reach the host's
// loopback addresses runs use: shots (the screenshot endpoint's), and the
// model API or an HTTP proxy when the operator runs them on loopback
// (ANTHROPIC_BASE_URL, HTTPS_PROXY, HTTP_PROXY). Nothing else there.
func (k *Keeper) Forward(shots string, log zerolog.Logger) {
	if k.Network == nil {
		return
	}
	addrs := []string{shots}
	// The model APIs' base URLs the agents read (Claude Code's, Gemini
	// CLI's, OpenAI's), and proxies.
	for _, v := range []string{"ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL", "OPENAI_BASE_URL", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"} {
		if a := netns.LoopbackAddr(os.Getenv(v)); a != "" {
			addrs = append(addrs, a)
		}
	}
	for _, a := range addrs {
		if ap, err := netip.ParseAddrPort(a); err == nil && ap.Addr().IsLoopback() && !slices.Contains(k.Network.Forward, a) {
			k.Network.Forward = append(k.Network.Forward, a)
		}
	}
	log.Info().Strs("forward", k.Network.Forward).Msg("homes have a network of their own; these host loopback addresses are reachable from them")
}
