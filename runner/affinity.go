package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// Affinity: a user's workspace lives on one runner, so every runner
// sharing the JOBS consumer runs only the jobs of users it holds (or of
// new users, which it then holds). A job of a user another runner holds is
// handed back to the consumer, to be delivered again, until that runner
// takes it; once the holder is gone (no heartbeat for RunnerTTL), the next
// runner to meet one of its users takes the user over.
type affinity struct {
	id         string
	runners    jetstream.KeyValue // heartbeats
	workspaces jetstream.KeyValue // user key → runner id
	every      time.Duration      // between heartbeats
	log        zerolog.Logger

	// held are the users this runner holds, known since its heartbeat
	// last lapsed: nobody takes a user from a runner whose heartbeat
	// lives, so their jobs need no read of the workspaces bucket.
	mu       sync.Mutex
	held     map[string]bool
	lastBeat time.Time // the last heartbeat written
	lapses   int       // how many times held was forgotten
}

// handedBack counts jobs handed back for the runner holding their user;
// each shows again in textslash_redeliveries_total{consumer="runner"} when
// delivered anew.
var handedBack = promauto.NewCounter(prometheus.CounterOpts{
	Name: "textslash_jobs_handed_back_total",
	Help: "Jobs this runner handed back because another runner holds their user's workspace.",
})

// handBackDelay is the least a job handed back waits before JetStream
// delivers it again, to whichever runner asks first. Each hand-back adds
// a random part of as much again: the runner handing a job back asks
// again at once, so it is first in line when the job comes due; with one
// fixed delay, two runners each holding the other's job's user got back,
// round after round, the job they had handed back, and ran neither
// (TestTwoRunners stalled so for a minute).
const handBackDelay = 200 * time.Millisecond

var runnerIDRE = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// DefaultID is the host name made safe as a KV key: in a container, the
// container's, which lasts as long as its workspace volume is attached.
func DefaultID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		return "runner"
	}
	return runnerIDRE.ReplaceAllString(host, "-")
}

// validID reports whether id may name a runner: a KV key of letters,
// digits, - and _.
func validID(id string) bool { return id != "" && !runnerIDRE.MatchString(id) }

func openAffinity(ctx context.Context, js jetstream.JetStream, id string) (*affinity, error) {
	if !validID(id) {
		return nil, fmt.Errorf("runner id %q: want letters, digits, - and _ only", id)
	}
	a := &affinity{id: id, every: contract.RunnerTTL / 3, log: *zerolog.Ctx(ctx)}
	var err error
	if a.runners, err = js.KeyValue(ctx, contract.BucketRunners); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", contract.BucketRunners, err)
	}
	if a.workspaces, err = js.KeyValue(ctx, contract.BucketWorkspaces); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", contract.BucketWorkspaces, err)
	}
	return a, nil
}

// beat tells the other runners this one is alive, every RunnerTTL/3 until
// ctx ends; then it says it is gone, so its users are taken over at once.
// Each write expects the revision of its last one: a key written by anyone
// else meanwhile means a second runner runs with the same id, and both
// would run the same users' jobs.
func (a *affinity) beat(ctx context.Context) {
	var rev uint64
	twin := false
	put := func() {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.every)
		defer cancel()
		now := []byte(time.Now().UTC().Format(time.RFC3339))
		var err error
		if rev != 0 {
			var next uint64
			next, err = a.runners.Update(pctx, a.id, now, rev)
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !twin {
				twin = true
				a.log.Error().Str("runner", a.id).Msg("runner heartbeat written by someone else: another runner uses this id (give each its own TEXTSLASH_RUNNER_ID, or both run the same users' jobs), or this one missed its heartbeats")
			}
			if err == nil {
				rev = next
				a.beaten()
				return
			}
		}
		// A first heartbeat, or one that found the key changed: this
		// runner's users may have been taken meanwhile.
		a.lapsed()
		if rev, err = a.runners.Put(pctx, a.id, now); err != nil && ctx.Err() == nil {
			a.log.Warn().Err(err).Msg("runner heartbeat")
		} else if err == nil {
			a.beaten()
		}
	}
	put()
	tick := time.NewTicker(a.every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			put()
		case <-ctx.Done():
			a.lapsed()
			dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := a.runners.Delete(dctx, a.id); err != nil {
				a.log.Warn().Err(err).Msg("runner heartbeat: could not say it is gone; its users wait for the heartbeat to expire")
			}
			return
		}
	}
}

// mine reports whether this runner runs u's jobs: it holds u, or u is new,
// or u's runner is gone (then it takes u over, and says so: taken).
func (a *affinity) mine(ctx context.Context, u contract.User) (mine, taken bool, err error) {
	known, lapses := a.holds(u)
	if known {
		return true, false, nil
	}
	defer func() {
		if mine {
			a.remember(u, lapses)
		}
	}()
	for range 5 { // another runner taking u at the same moment: look again
		e, err := a.workspaces.Get(ctx, u.Key())
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			_, err = a.workspaces.Create(ctx, u.Key(), []byte(a.id))
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
			return err == nil, false, err
		}
		if err != nil {
			return false, false, err
		}
		holder := string(e.Value())
		if holder == a.id {
			return true, false, nil
		}
		if _, err := a.runners.Get(ctx, holder); err == nil {
			return false, false, nil
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, false, err
		}
		if _, err := a.workspaces.Update(ctx, u.Key(), []byte(a.id), e.Revision()); errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		} else if err != nil {
			return false, false, err
		}
		a.log.Info().Str("user", u.Key()).Str("from", holder).Msg("taking over a user whose runner is gone (its workspace follows from its snapshots, when they are on)")
		return true, true, nil
	}
	return false, false, errors.New("workspaces: the user's holder keeps changing")
}

// beaten notes a heartbeat written; one later than RunnerTTL after the
// last may have let others take this runner's users.
func (a *affinity) beaten() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if now.Sub(a.lastBeat) >= contract.RunnerTTL {
		a.held = nil
		a.lapses++
	}
	a.lastBeat = now
}

// lapsed forgets the users this runner holds: they are asked for again.
func (a *affinity) lapsed() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.held, a.lastBeat = nil, time.Time{}
	a.lapses++
}

// holds reports whether this runner is known to hold u: it met u since its
// heartbeat last lapsed, and its last heartbeat is recent enough that its
// key cannot have expired. lapses is for remember.
func (a *affinity) holds(u contract.User) (known bool, lapses int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.held[u.Key()] && time.Since(a.lastBeat) < contract.RunnerTTL-a.every, a.lapses
}

// remember notes that this runner holds u, as found when lapses was the
// count of lapses: unless one came meanwhile.
func (a *affinity) remember(u contract.User, lapses int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lastBeat.IsZero() || a.lapses != lapses {
		return // not beating, or lapsed since: nothing vouches for it
	}
	if a.held == nil || len(a.held) >= 100_000 {
		a.held = map[string]bool{}
	}
	a.held[u.Key()] = true
}

// takes reports whether this runner runs the job msg; a job of a user
// another runner holds is handed back for that runner.
func (r *Runner) takes(ctx context.Context, aff *affinity, msg jetstream.Msg) bool {
	u, err := contract.UserFromSubject(msg.Subject())
	if err != nil {
		return true // the handler terminates it
	}
	mine, taken, err := aff.mine(ctx, u)
	if taken {
		r.mu.Lock()
		r.takenOver[u.Key()] = true
		r.mu.Unlock()
	}
	log := bus.TraceLog(r.log, bus.Trace(msg.Headers())).With().Str("user", u.Key()).Logger()
	if err != nil {
		log.Warn().Err(err).Msg("workspaces: cannot tell which runner holds the user; job handed back")
	}
	if !mine {
		handedBack.Inc()
		if err := msg.NakWithDelay(handBackDelay + rand.N(handBackDelay)); err != nil {
			log.Warn().Err(err).Msg("hand a job back")
		}
		return false
	}
	return true
}

// tookOver reports, once, whether this runner took u over from a runner
// gone since u's last job here.
func (r *Runner) tookOver(u contract.User) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	taken := r.takenOver[u.Key()]
	delete(r.takenOver, u.Key())
	return taken
}
