package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// Two runners, each holding the user of the job the other has: each hands
// its job back and asks again at once, as takeJobs does. The runner that
// handed a job back is then first in line when it comes due; with one
// fixed delay for every hand-back each got back the job it had handed
// back, round after round, and neither ran anything (TestTwoRunners' stall).
func TestHandBackReachesTheHolder(t *testing.T) {
	e := newRunnerEnv(t)
	ctx, stop := context.WithCancel(t.Context())
	var beats sync.WaitGroup
	defer func() { stop(); beats.Wait() }()
	runners := map[string]*affinity{}
	users := map[string]contract.User{"r1": e.user(contract.ChannelWeb, "alice"), "r2": e.user(contract.ChannelWeb, "bob")}
	for _, id := range []string{"r1", "r2"} {
		a, err := openAffinity(t.Context(), e.js, id)
		if err != nil {
			t.Fatal(err)
		}
		beats.Go(func() { a.beat(ctx) })
		natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
			_, err := a.runners.Get(t.Context(), id)
			return err
		})
		if mine, _, err := a.mine(t.Context(), users[id]); err != nil || !mine {
			t.Fatalf("%s holding %s: %v, %v", id, users[id].Key(), mine, err)
		}
		runners[id] = a
	}
	cons, err := e.js.Consumer(t.Context(), contract.StreamJobs, contract.ConsumerRunner)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runner{log: zerolog.Nop(), takenOver: map[string]bool{}}
	// r1 has bob's job, r2 alice's.
	e.job(users["r2"], "j-bob", "pwd")
	e.job(users["r1"], "j-alice", "pwd")
	next := func() jetstream.MessageBatch {
		t.Helper()
		b, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	one := func(b jetstream.MessageBatch) jetstream.Msg {
		t.Helper()
		m := <-b.Messages()
		if m == nil {
			t.Fatalf("no job delivered: %v", b.Error())
		}
		return m
	}
	held := map[string]jetstream.Msg{"r1": one(next()), "r2": one(next())}
	for round := range 20 {
		var ran []string
		for _, id := range []string{"r1", "r2"} {
			if r.takes(t.Context(), runners[id], held[id]) {
				ran = append(ran, id)
			}
		}
		if len(ran) > 0 {
			t.Logf("round %d: %v took a job of theirs", round, ran)
			return
		}
		// Each asks again right after its hand-back, in that order.
		b1, b2 := next(), next()
		held["r1"], held["r2"] = one(b1), one(b2)
	}
	t.Error("20 rounds of hand-backs and each runner got back the job it had handed back; want the job to reach the runner holding its user")
}
