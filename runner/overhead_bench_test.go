package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/sandbox"
)

// BenchmarkRunOverhead: the CPU the runner spends per run beyond the
// agent's own process (the target: ≤0.5 ms per run for workspace
// checks, git status, sweeps, tokens).
//
// One Runner with the shell agent, no sandbox (no bwrap, no cgroup: this
// measures textslash, not the sandbox), concurrency 8, over an embedded,
// provisioned JetStream in this process. b.N jobs, each the command `true`,
// are published as the dispatcher publishes them (a contract.Job on
// contract.JobSubject with its Nats-Msg-Id), all at once, and the benchmark
// waits for their b.N done events. Reported per run:
//
//   - self-cpu-ms/run: getrusage(RUSAGE_SELF) user+sys over the load. This
//     process is the runner, the embedded NATS server (storing the jobs,
//     the started and done events, the acks) and the benchmark publishing
//     jobs and taking done events: an upper bound on the runner's own CPU.
//     A CPU profile (-cpuprofile) splits it (see runner.handle's share).
//   - agent-cpu-ms/run: getrusage(RUSAGE_CHILDREN): the processes the
//     runner started and waited for: the agent (bash -c true) and any
//     helper program the runner itself runs (git, none for an empty
//     workspace).
//   - wall-ms/run: the load's wall time over b.N (8 at a time).
//
// ns/op is zeroed: it would be the wall time of the whole load.
//
// Sub-benchmarks: new-users, every job another person's (first run: the
// runner claims the person, makes the workspace and reads the registry);
// returning, 32 people who ran a job before, their jobs published in
// waves of one each (a person's jobs run one at a time).
//
// As root, agents run as $TEXTSLASH_TEST_AGENT_USER (textslash-agent
// unless set) when that user exists, as a deployment runs them; else as
// root, as the runner tests do.
//
//	go test -run '^$' -bench RunOverhead -benchtime 500x ./runner/
func BenchmarkRunOverhead(b *testing.B) {
	b.Run("new-users", func(b *testing.B) { runOverhead(b, 0) })
	b.Run("returning", func(b *testing.B) { runOverhead(b, 32) })
}

// runOverhead runs b.N jobs: for b.N people when people is 0, else in
// waves over that many people, each run once before the measure.
func runOverhead(b *testing.B, people int) {
	s := natstest.RunJetStream(b)
	if err := bus.Provision(b.Context(), s.JS, bus.Options{}); err != nil {
		b.Fatalf("Provision: %v", err)
	}
	cfg := Config{Agent: AgentShell, Workspaces: b.TempDir(), Concurrency: 8, Timeout: time.Minute}
	if os.Geteuid() == 0 {
		name := os.Getenv("TEXTSLASH_TEST_AGENT_USER")
		if name == "" {
			name = "textslash-agent"
		}
		if _, err := sandbox.LookupUser(name); err == nil {
			cfg.AgentUser = name
		}
	}
	// Info, as deployed: each run's log lines are formatted, then dropped.
	r, err := New(cfg, s.JS, zerolog.New(io.Discard).Level(zerolog.InfoLevel))
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ended; err != nil {
			b.Errorf("Run: %v", err)
		}
	}()

	// Done events, as egress takes them: every person's, on one
	// subscription.
	var mu sync.Mutex
	want := map[string]bool{}
	var bad []string
	arrived := make(chan struct{}, 1024)
	sub, err := s.NC.Subscribe(contract.AllEvents(contract.KindDone), func(m *nats.Msg) {
		var ev contract.Event
		if err := contract.Decode(m.Data, &ev); err != nil {
			return
		}
		mu.Lock()
		if want[ev.JobID] {
			delete(want, ev.JobID)
			if ev.Status != contract.StatusOK {
				bad = append(bad, fmt.Sprintf("%s: %s %q", ev.JobID, ev.Status, ev.Text))
			}
			arrived <- struct{}{}
		}
		mu.Unlock()
	})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	publish := func(u contract.User, id string) {
		mu.Lock()
		want[id] = true
		mu.Unlock()
		j := contract.Job{ID: id, User: u, Text: "true", At: time.Now().UTC()}
		data, err := contract.Encode(&j)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bus.Publish(ctx, s.JS, contract.JobSubject(u), data, contract.MsgID(u, id, "job")); err != nil {
			b.Fatalf("publish job %s: %v", id, err)
		}
	}
	wait := func(n int) {
		deadline := time.After(2 * time.Minute)
		for range n {
			select {
			case <-arrived:
			case <-deadline:
				mu.Lock()
				left := len(want)
				mu.Unlock()
				b.Fatalf("%d runs not done after 2 minutes", left)
			}
		}
	}
	user := func(i int) contract.User {
		u, err := contract.NewUser(contract.ChannelWeb, fmt.Sprintf("bench%d", i))
		if err != nil {
			b.Fatal(err)
		}
		return u
	}

	var users []contract.User
	if people > 0 {
		// Each person's first run, not measured.
		for i := range people {
			users = append(users, user(i))
			publish(users[i], fmt.Sprintf("SMwarm%d", i))
		}
		wait(people)
	}

	var self0, kids0 syscall.Rusage
	b.ResetTimer()
	start := time.Now()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self0)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids0)
	if people == 0 {
		for i := range b.N {
			publish(user(i), fmt.Sprintf("SM%d", i))
		}
		wait(b.N)
	} else {
		for i := 0; i < b.N; {
			n := min(people, b.N-i)
			for k := range n {
				publish(users[k], fmt.Sprintf("SM%d", i+k))
			}
			wait(n)
			i += n
		}
	}
	var self1, kids1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self1)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids1)
	wall := time.Since(start)
	b.StopTimer()

	mu.Lock()
	if len(bad) > 0 {
		b.Errorf("%d runs did not end ok, e.g. %s", len(bad), bad[0])
	}
	mu.Unlock()
	perRun := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(perRun(cpuOf(&self1)-cpuOf(&self0)), "self-cpu-ms/run")
	b.ReportMetric(perRun(cpuOf(&kids1)-cpuOf(&kids0)), "agent-cpu-ms/run")
	b.ReportMetric(perRun(wall), "wall-ms/run")
	b.ReportMetric(0, "ns/op")
}

// cpuOf is a rusage's user and system time.
func cpuOf(ru *syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
