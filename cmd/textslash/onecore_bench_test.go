package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/twiliotest"
)

// onOneCore is the argv that runs textslash serve on core 0 alone: its
// services, its NATS server and the agents it starts share that core.
// scripts/bench runs the benchmark itself (the load generator and the fake
// Twilio) on core 1. (runtime.NumCPU counts only the cores this process
// may use, one under taskset, so a machine with a single core is not told
// apart here: there both share it.)
func onOneCore(b *testing.B) []string {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		b.Skip("taskset (util-linux) pins textslash to one core; not installed")
	}
	return []string{taskset, "-c", "0", binary, "serve"}
}

// BenchmarkOneCore: BenchmarkEndToEnd with all of textslash pinned to one
// core, agent processes included: open loops of 200 and 500 messages/s
// from 5,000 people. Reports ack and reply latencies, and the rate replies
// came at (what one core sustains, when it is below the load's).
//
//	taskset -c 1 go test -run '^$' -bench OneCore ./cmd/textslash/
func BenchmarkOneCore(b *testing.B) {
	for _, rate := range []int{200, 500} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			openLoop(b, startTwilioBenchOn(b, onOneCore(b), nil, 5000, "TEXTSLASH_CONCURRENCY=8"), rate, int(float64(rate)*benchSeconds(b).Seconds()))
		})
	}
}

// BenchmarkBurst: how textslash on one core (as BenchmarkOneCore) answers
// while webhooks pour in, and how fast it drains afterwards.
//
//   - steady: 64 senders, each sending its next message once the previous
//     one was answered, for benchSeconds: the rate textslash answers at
//     with no backlog.
//   - burst: 64 senders as fast as textslash acknowledges, for 15 s, from
//     5,000 people in turn; then every message's final reply (the agent's,
//     or "Queue full" for a person's sixth waiting message) is awaited.
//
// Reports the steady rate; the burst's acknowledgements/s; the final
// replies/s during the burst and while draining, each also as a share of
// the steady rate; the slowest whole second of the drain; and the drain's
// length. The replies-per-second timeline is logged, and written as JSON
// to $TEXTSLASH_BENCH_TIMELINE when set (scripts/bench puts it in
// bench.json). With $TEXTSLASH_BENCH_PROFILES set to a directory, it
// writes textslash's CPU profiles of the steady phase (steady.pprof), the
// burst's first 10 s (burst.pprof) and the drain's first 10 s
// (drain.pprof) there, its heap before and after the steady phase
// (steady-heap-0.pprof, steady-heap-1.pprof: their difference is what the
// steady phase allocated) and at the burst's end (burst-heap.pprof).
//
//	taskset -c 1 go test -run '^$' -bench Burst ./cmd/textslash/
func BenchmarkBurst(b *testing.B) {
	argv := onOneCore(b)
	const users, senders = 5000, 64
	burstFor := 15 * time.Second

	// Each final reply, by the fake Twilio's clock: the agent's answer
	// "s<k>-<j>" (steady, the closed loop's) or "b<i>" (burst), or "Queue
	// full".
	var mu sync.Mutex
	var finals []time.Time // the burst's, in arrival order
	steadyLoop := newClosedLoop(senders, senders)
	onMessage := func(m twiliotest.Message) {
		switch {
		case strings.HasPrefix(m.Body, "b"), m.Body == dispatcher.MsgQueueFull:
			mu.Lock()
			finals = append(finals, m.At)
			mu.Unlock()
		default:
			steadyLoop.onMessage(m)
		}
	}
	// A home for each of the 64 people of the steady phase (a shell's home
	// is a few MB): what an operator with that many active people sets.
	env := []string{"TEXTSLASH_CONCURRENCY=8", "TEXTSLASH_HOMES_MAX=" + os.Getenv("TEXTSLASH_BENCH_HOMES_MAX")}
	if os.Getenv("TEXTSLASH_BENCH_HOMES_MAX") == "" {
		env[1] = "TEXTSLASH_HOMES_MAX=80"
	}
	prof, profEnv := newBenchProfiles(b)
	env = append(env, profEnv...)
	save, profile := prof.save, prof.start
	tree := newProcTree(b)
	tb := startTwilioBenchOn(b, argv, onMessage, users, env...)
	tree.root = tb.inst.cmd.Process.Pid
	steadyLoop.attach(tb)

	// Steady: sender k is person k, one message at a time.
	steadyLoop.run(b, 2*time.Second, 0) // warm-up
	d := benchSeconds(b)
	save("steady-heap-0.pprof", "heap")
	profile("steady.pprof", fmt.Sprintf("profile?seconds=%d", max(1, int(d.Seconds())-1)))
	t0, cpu0, own0 := time.Now(), tree.cpu(), tree.own()
	answered := steadyLoop.run(b, d, 0)
	steady := float64(answered) / time.Since(t0).Seconds()
	// CPU per reply, whole process tree (agents, sandboxes) and textslash
	// alone: what the rate would be on a core of its own, however busy
	// the machine is.
	perReply := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(max(answered, 1)) }
	cpuTree, cpuOwn := perReply(tree.cpu()-cpu0), perReply(tree.own()-own0)
	save("steady-heap-1.pprof", "heap")
	if prof.on() {
		// Allocations per message: go tool pprof -sample_index=alloc_space
		// -base steady-heap-0.pprof steady-heap-1.pprof, divided by this.
		fmt.Printf("burst: %d messages answered in the steady phase\n", answered)
	}
	if b.Failed() {
		msgs := tb.api.Messages()
		for _, m := range msgs[max(0, len(msgs)-5):] {
			b.Logf("the fake Twilio's last messages: to %s: %q", m.To, m.Body)
		}
		return
	}

	// Burst: people from senders on, in turn, so that none is still busy
	// with a steady message.
	b.ResetTimer()
	start, cpuBurst := time.Now(), tree.cpu()
	end := start.Add(burstFor)
	profile("burst.pprof", "profile?seconds=10")
	var seq, refused atomic.Int64
	var acks []time.Time
	var wg sync.WaitGroup
	for range senders {
		wg.Go(func() {
			var mine []time.Time
			for time.Now().Before(end) {
				i := seq.Add(1) - 1
				u := senders + int(i)%(users-senders)
				if code := tb.webhook(u, fmt.Sprintf("echo b%d", i), fmt.Sprintf("SMb%030d", i)); code != http.StatusOK {
					// Twilio would not send it again: lost, and reported.
					refused.Add(1)
					continue
				}
				mine = append(mine, time.Now())
			}
			mu.Lock()
			acks = append(acks, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	burstEnd := time.Now()
	profile("burst-heap.pprof", "heap")
	profile("drain.pprof", "profile?seconds=10")
	n := len(acks)
	natstest.CheckFor(b, 10*time.Minute, 50*time.Millisecond, func() error {
		mu.Lock()
		got := len(finals)
		mu.Unlock()
		if got < n {
			return fmt.Errorf("burst: %d of %d messages had their final reply", got, n)
		}
		return nil
	})
	b.StopTimer()
	cpuBurst = tree.cpu() - cpuBurst
	mu.Lock()
	done := finals[:n]
	mu.Unlock()

	// The timeline: acknowledgements and final replies per second since
	// the burst began.
	last := done[0]
	for _, t := range done {
		if t.After(last) {
			last = t
		}
	}
	secs := int(last.Sub(start)/time.Second) + 1
	type second struct {
		Acks    int `json:"acks"`
		Replies int `json:"replies"`
	}
	timeline := make([]second, secs)
	for _, t := range acks {
		timeline[min(int(t.Sub(start)/time.Second), secs-1)].Acks++
	}
	during, after := 0, 0
	for _, t := range done {
		timeline[int(t.Sub(start)/time.Second)].Replies++
		if t.Before(burstEnd) {
			during++
		} else {
			after++
		}
	}
	drain := last.Sub(burstEnd)
	// The slowest whole second of the drain (its first and last seconds
	// are partial).
	slowest := -1
	for s := int(burstEnd.Sub(start)/time.Second) + 1; s < secs-1; s++ {
		if slowest < 0 || timeline[s].Replies < slowest {
			slowest = timeline[s].Replies
		}
	}
	var tl strings.Builder
	for s, x := range timeline {
		fmt.Fprintf(&tl, "%3d s: %5d acks %5d replies\n", s, x.Acks, x.Replies)
	}
	// On standard output: a benchmark's log is cut at 10 lines.
	fmt.Printf("burst: steady %.0f replies/s; burst of %d messages in %s; timeline:\n%s", steady, n, burstEnd.Sub(start).Round(time.Millisecond), tl.String())
	if path := os.Getenv("TEXTSLASH_BENCH_TIMELINE"); path != "" {
		data, _ := json.Marshal(map[string]any{"steady_replies_per_s": steady, "burst_s": burstFor.Seconds(), "messages": n, "seconds": timeline})
		if err := os.WriteFile(path, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	burstRate := float64(during) / burstEnd.Sub(start).Seconds()
	drainRate := float64(after) / max(drain.Seconds(), 0.001)
	b.ReportMetric(steady, "steady-replies/s")
	b.ReportMetric(cpuTree, "steady-cpu-ms/reply")
	b.ReportMetric(cpuOwn, "steady-own-cpu-ms/reply")
	b.ReportMetric(cpuBurst.Seconds()*1000/float64(max(n, 1)), "burst-cpu-ms/reply")
	b.ReportMetric(float64(n)/burstEnd.Sub(start).Seconds(), "burst-acks/s")
	b.ReportMetric(float64(refused.Load()), "burst-refused")
	b.ReportMetric(burstRate, "burst-replies/s")
	b.ReportMetric(100*burstRate/steady, "burst-%steady")
	b.ReportMetric(drainRate, "drain-replies/s")
	b.ReportMetric(100*drainRate/steady, "drain-%steady")
	if slowest >= 0 {
		b.ReportMetric(float64(slowest), "drain-slowest-s-replies")
	}
	b.ReportMetric(drain.Seconds(), "drain-s")
	b.ReportMetric(float64(peakRSSKB(b, tb.inst.cmd.Process.Pid))/1024, "peak-RSS-MB")
	b.ReportMetric(0, "ns/op")
}
