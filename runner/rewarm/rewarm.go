// Package rewarm makes again, after a runner restarts, the homes of the
// people it held who were active lately, so that their next message does
// not pay for a home's and an agent's start. Who they are is in
// JetStream already: the workspaces bucket says whose workspace lives on
// which runner, and the users bucket, whose entry for a person changes
// at every run, says when each was last active (the entry's time). They
// are warmed one at a time, the most recent first, while there is room;
// what warming one means is the runner's (Run's warm).
package rewarm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// Person is someone to warm: who, their state as the dispatcher left it
// (their settings: project, mode, new session), and when it last changed.
type Person struct {
	User  contract.User
	State contract.UserState
	At    time.Time
}

// Errors a warm function returns.
var (
	// ErrSkip: nothing to warm for this person (their message is
	// running, or makes what it needs itself); Run goes on to the next.
	ErrSkip = errors.New("rewarm: nothing to warm for this person")
	// ErrNoRoom: no room for one more (memory, the homes' count); Run
	// stops.
	ErrNoRoom = errors.New("rewarm: no room for one more home")
)

var warmed = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "textslash_homes_rewarmed_total",
	Help: "What a runner made again after its restart, for the people active lately: a home, or a warm agent in it.",
}, []string{"what"})

// Recent are the people whose workspace runner holds (the workspaces
// bucket) and whose state changed within the last within (the users
// bucket), the most recent first.
func Recent(ctx context.Context, workspaces, users jetstream.KeyValue, runner string, within time.Duration) ([]Person, error) {
	w, err := workspaces.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("workspaces: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var out []Person
	for e := range w.Updates() {
		if e == nil {
			break // the last value kept
		}
		if string(e.Value()) != runner {
			continue
		}
		channel, id, _ := strings.Cut(e.Key(), ".")
		u, err := contract.NewUser(channel, id)
		if err != nil {
			continue
		}
		st, err := users.Get(ctx, e.Key())
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("users: %w", err)
		}
		p := Person{User: u, At: st.Created()}
		if time.Since(p.At) > within || contract.Decode(st.Value(), &p.State) != nil {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Person) int { return cmp.Compare(b.At.UnixNano(), a.At.UnixNano()) })
	return out, ctx.Err()
}

// Start warms, in the background, the people whose workspace runner
// holds and who were active within the last within (Recent), with warm
// (Run), until ctx ends; wait returns once it is over.
func Start(ctx context.Context, workspaces, users jetstream.KeyValue, runner string, within time.Duration, warm Warm) (wait func()) {
	log := *zerolog.Ctx(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		people, err := Recent(ctx, workspaces, users, runner, within)
		if err != nil && ctx.Err() == nil {
			log.Warn().Err(err).Msg("homes not made again after the restart: who was active cannot be told")
		}
		Run(ctx, people, warm)
	})
	return wg.Wait
}

// Warm makes p's home, and its agent when it can: it returns the home's
// id and whether it started the agent there too, or ErrSkip, ErrNoRoom or
// another error.
type Warm func(ctx context.Context, p Person) (home string, agent bool, err error)

// Run warms people in order with warm, until one finds no room or ctx
// ends, and says each home made again (by its opaque id, never whose it
// is); an error other than ErrSkip and ErrNoRoom is logged, and Run goes
// on.
func Run(ctx context.Context, people []Person, warm Warm) {
	log := *zerolog.Ctx(ctx)
	made := 0
	for _, p := range people {
		if ctx.Err() != nil {
			return
		}
		t0 := time.Now()
		home, agent, err := warm(ctx, p)
		switch {
		case errors.Is(err, ErrSkip):
			continue
		case errors.Is(err, ErrNoRoom):
			log.Info().Int("made", made).Int("people", len(people)).Msg("no room to make more homes again after the restart; the others are made at their next message")
			return
		case err != nil:
			if ctx.Err() == nil {
				log.Warn().Err(err).Msg("a home not made again after the restart; its person's next message makes it")
			}
			continue
		}
		made++
		warmed.WithLabelValues("home").Inc()
		if agent {
			warmed.WithLabelValues("warm_agent").Inc()
		}
		log.Info().Str("home", home).Bool("agent", agent).Dur("took_ms", time.Since(t0)).Msg("home made again after a restart")
	}
}
