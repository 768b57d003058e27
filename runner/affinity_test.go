package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// A user's jobs belong to the runner that met the user first while it is
// alive; another takes the user over once that runner is gone.
func TestAffinityHolder(t *testing.T) {
	e := newRunnerEnv(t)
	open := func(id string) *affinity {
		a, err := openAffinity(t.Context(), e.js, id)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	r1, r2 := open("r1"), open("r2")
	u := e.user(contract.ChannelWeb, "alice")
	var taken []string // who took the user over from a runner gone
	mine := func(a *affinity) bool {
		t.Helper()
		ok, tookOver, err := a.mine(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		if tookOver {
			taken = append(taken, a.id)
		}
		return ok
	}
	alive := func(a *affinity) {
		t.Helper()
		natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
			_, err := a.runners.Get(t.Context(), a.id)
			return err
		})
	}
	ctx, stop := context.WithCancel(t.Context())
	var beats sync.WaitGroup
	beats.Go(func() { r1.beat(ctx) })
	alive(r1)
	if !mine(r1) || mine(r2) || !mine(r1) {
		t.Fatal("want r1, alive, to hold the user it met first")
	}
	stop() // r1 stops: it deletes its heartbeat
	beats.Wait()
	ctx2, stop2 := context.WithCancel(t.Context())
	beats.Go(func() { r2.beat(ctx2) })
	defer func() { stop2(); beats.Wait() }()
	alive(r2)
	if !mine(r2) || mine(r1) {
		t.Error("want r2 to take over the user of r1, gone, and keep it")
	}
	if !slices.Equal(taken, []string{"r2"}) {
		t.Errorf("took the user over: %q; want r2, once (meeting a new user or its own is no take-over)", taken)
	}
	if _, err := r1.runners.Get(t.Context(), "r1"); err == nil {
		t.Error("r1's heartbeat outlived r1")
	}
}

// Two runners with one id notice: each finds the heartbeat written by the
// other.
func TestAffinitySameID(t *testing.T) {
	e := newRunnerEnv(t)
	var logs natstest.Logs
	ctx, stop := context.WithCancel(t.Context())
	var beats sync.WaitGroup
	for range 2 {
		a, err := openAffinity(zerolog.New(&logs).WithContext(t.Context()), e.js, "twin")
		if err != nil {
			t.Fatal(err)
		}
		a.every = 20 * time.Millisecond
		beats.Go(func() { a.beat(ctx) })
	}
	natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if len(logs.Find(t, "runner heartbeat written by someone else: another runner uses this id (give each its own TEXTSLASH_RUNNER_ID, or both run the same users' jobs), or this one missed its heartbeats", nil)) == 0 {
			return errors.New("no runner noticed the other")
		}
		return nil
	})
	stop()
	beats.Wait()
}

// A runner remembers the users it holds while its heartbeat lives: their
// next jobs read nothing from the workspaces bucket. Once its heartbeat
// lapses (another runner may then have taken them), it asks again.
func TestAffinityRemembersItsUsers(t *testing.T) {
	e := newRunnerEnv(t)
	a, err := openAffinity(t.Context(), e.js, "r1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	var beats sync.WaitGroup
	beats.Go(func() { a.beat(ctx) })
	defer func() { stop(); beats.Wait() }()
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		_, err := a.runners.Get(t.Context(), a.id)
		return err
	})
	var reads atomic.Int32
	sub, err := e.js.Conn().Subscribe("$JS.API.DIRECT.GET.KV_"+contract.BucketWorkspaces+".>", func(*nats.Msg) { reads.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	u := e.user(contract.ChannelWeb, "alice")
	for range 4 {
		if ok, _, err := a.mine(t.Context(), u); err != nil || !ok {
			t.Fatalf("mine: %v, %v; want the user held", ok, err)
		}
	}
	if err := e.js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n > 1 {
		t.Errorf("4 jobs of one user read who holds it %d times; want once", n)
	}
	// Another runner took the user over while this one's heartbeat had
	// lapsed: asked again, this runner sees it.
	if _, err := a.workspaces.Put(t.Context(), u.Key(), []byte("r2")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.runners.Put(t.Context(), "r2", []byte("now")); err != nil {
		t.Fatal(err)
	}
	a.lapsed()
	if ok, _, err := a.mine(t.Context(), u); err != nil || ok {
		t.Errorf("mine after a lapse: %v, %v; want r2's user refused", ok, err)
	}
}
