package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/twiliotest"
)

// BenchmarkCapacity: what textslash answers on one core with its
// defaults: neither TEXTSLASH_CONCURRENCY nor TEXTSLASH_HOMES_MAX set, so
// runs at once and homes kept are bounded by memory alone, and homes (a
// person's bubblewrap sandbox kept between their runs, with a network
// namespace of its own reached through slirp4netns) on, as root. The shell
// agent answers each message; all of textslash (its NATS server, homes
// and agents) is on core 0 as in BenchmarkOneCore, the load on core 1.
// CPU is that of textslash's whole process tree (textslash, bwrap,
// slirp4netns, nsenter, sh, …: procTree); the tree's memory is the sum of
// its processes' resident sets, sampled every 2 s (a page shared by two
// processes counted twice).
//
//   - closed-loop-64: 64 people, 16 writing at a time (closedLoop: each of
//     16 senders writes for 4 people in turn, its next message once the
//     last was answered). First each person's first message, their home
//     made (first-cpu-ms/msg), then 2 s of warm-up, then benchSeconds
//     measured: replies/s, cpu-ms/reply and textslash-cpu-ms/reply (the Go
//     process's own share). With $TEXTSLASH_BENCH_PROFILES set to a
//     directory, textslash's CPU profile of the measured seconds is written
//     there (closed-loop.pprof), and its heap before and after them
//     (closed-loop-heap-0.pprof, closed-loop-heap-1.pprof).
//   - new-5000: 5,000 people never seen before, each writing once, in an
//     open loop (openLoop) at 100 messages/s, the target rate, for 50 s:
//     drain-s, how long the last reply trailed the load, then says whether
//     textslash keeps up with that rate (unanswered: those still waiting
//     two minutes after the load, replies/s then the rate it held;
//     webhooks as fast as acknowledged, as BenchmarkBurst sends, would
//     queue the 5,000 first messages in seconds and measure 5,000 ÷ the
//     rate instead). Reports openLoop's latencies and replies/s, and
//     cpu-ms/msg and textslash-cpu-ms/msg: the CPU of the load and its
//     drain over the messages answered.
//   - new-600: the same at 15 newcomers a second for 40 s, a rate one core
//     keeps up with: what a newcomer's message costs when none waits
//     (cpu-ms/msg). With TEXTSLASH_HOMES_MAX=64 each newcomer's home also
//     lets another go. With $TEXTSLASH_BENCH_PROFILES set, both write
//     textslash's CPU profile of the load's seconds (new-5000.pprof,
//     new-600.pprof).
//
// All report textslash's peak RSS and the peak of the memory the tree
// holds (peak-tree-MB, procTree.pss sampled every 2 s).
//
//	taskset -c 1 go test -run '^$' -bench Capacity ./cmd/textslash/
func BenchmarkCapacity(b *testing.B) {
	b.Run("closed-loop-64", func(b *testing.B) {
		loop := newClosedLoop(16, 64)
		tree := newProcTree(b)
		prof, env := newBenchProfiles(b)
		tb := startTwilioBenchOn(b, onOneCore(b), loop.onMessage, 64, env...)
		tree.root = tb.inst.cmd.Process.Pid
		sampling, stopSampling := context.WithCancel(b.Context())
		peak := tree.samplePSS(sampling, 2*time.Second)
		loop.attach(tb)

		cpu0 := tree.cpu()
		firsts := loop.run(b, 0, 1)
		firstCPU := tree.cpu() - cpu0
		loop.run(b, 2*time.Second, 0) // warm-up
		d := benchSeconds(b)
		prof.save("closed-loop-heap-0.pprof", "heap")
		prof.start("closed-loop.pprof", fmt.Sprintf("profile?seconds=%d", max(1, int(d.Seconds())-1)))
		b.ResetTimer()
		t0, cpu0, own0 := time.Now(), tree.cpu(), tree.own()
		replies := loop.run(b, d, 0)
		elapsed := time.Since(t0)
		b.StopTimer()
		prof.save("closed-loop-heap-1.pprof", "heap")
		if prof.on() {
			fmt.Printf("closed-loop-64: %d replies measured\n", replies)
		}
		cpu, own := tree.cpu()-cpu0, tree.own()-own0
		perMsg := func(d time.Duration, n int) float64 { return ms(d) / float64(max(n, 1)) }
		b.ReportMetric(float64(replies)/elapsed.Seconds(), "replies/s")
		b.ReportMetric(perMsg(cpu, replies), "cpu-ms/reply")
		b.ReportMetric(perMsg(own, replies), "textslash-cpu-ms/reply")
		b.ReportMetric(perMsg(firstCPU, firsts), "first-cpu-ms/msg")
		b.ReportMetric(float64(peakRSSKB(b, tree.root))/1024, "peak-RSS-MB")
		stopSampling()
		b.ReportMetric(float64((<-peak)>>20), "peak-tree-MB")
		b.ReportMetric(0, "ns/op")
	})
	b.Run("new-5000", func(b *testing.B) { newPeople(b, 5000, 100) })
	b.Run("new-600", func(b *testing.B) { newPeople(b, 600, 15) })
}

// newPeople is n people never seen before writing once each, rate a
// second (BenchmarkCapacity's new-5000 and new-600).
func newPeople(b *testing.B, people, rate int) {
	tree := newProcTree(b)
	prof, env := newBenchProfiles(b)
	// One more person: openLoop's warm-up message is theirs.
	tb := startTwilioBenchOn(b, onOneCore(b), nil, people+1, env...)
	tree.root = tb.inst.cmd.Process.Pid
	sampling, stopSampling := context.WithCancel(b.Context())
	peak := tree.samplePSS(sampling, 2*time.Second)
	// The CPU profile covers the load's time, past the warm-up.
	name := fmt.Sprintf("new-%d", people)
	prof.start(name+".pprof", fmt.Sprintf("profile?seconds=%d", max(1, people/rate)))
	cpu0, own0 := tree.cpu(), tree.own()
	drain, answered := openLoop(b, tb, rate, people)
	cpu, own := tree.cpu()-cpu0, tree.own()-own0
	b.ReportMetric(ms(cpu)/float64(answered+1), "cpu-ms/msg")
	b.ReportMetric(ms(own)/float64(answered+1), "textslash-cpu-ms/msg")
	b.ReportMetric(drain.Seconds(), "drain-s")
	stopSampling()
	b.ReportMetric(float64((<-peak)>>20), "peak-tree-MB")
}

// closedLoop is people writing one message at a time, each sent once the
// sender's previous one was answered: senders at once, sender k writing
// for people k, k+senders, k+2·senders, … (of the first people of its
// twilioBench) in turn, each message "echo s<person>-<j>", which the shell
// agent answers "s<person>-<j>".
type closedLoop struct {
	senders, people int

	mu      sync.Mutex
	tb      *twilioBench
	waiting map[string]chan struct{} // a person's "whatsapp:<number>" → their answer
	// next is each person's next message's number, counted on from one
	// run to the next: a MessageSid used again is a retry, dropped.
	next []int
}

func newClosedLoop(senders, people int) *closedLoop {
	return &closedLoop{senders: senders, people: people, next: make([]int, people)}
}

// attach sends the loop's messages to tb, started with onMessage.
func (cl *closedLoop) attach(tb *twilioBench) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.tb = tb
	cl.waiting = map[string]chan struct{}{}
	for p := range cl.people {
		cl.waiting["whatsapp:"+tb.numbers[p]] = make(chan struct{}, 1)
	}
}

// onMessage hands each answer of the loop, as the fake Twilio accepts it,
// to its person's sender.
func (cl *closedLoop) onMessage(m twiliotest.Message) {
	if !strings.HasPrefix(m.Body, "s") {
		return
	}
	cl.mu.Lock()
	ch := cl.waiting[m.To]
	cl.mu.Unlock()
	if ch != nil {
		ch <- struct{}{}
	}
}

// run sends for d, and on until each person has sent rounds messages in
// this run; it returns how many were answered.
func (cl *closedLoop) run(b *testing.B, d time.Duration, rounds int) int {
	var answered atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for k := range cl.senders {
		var mine []int
		for p := k; p < cl.people; p += cl.senders {
			mine = append(mine, p)
		}
		wg.Go(func() {
			for i := 0; time.Now().Before(stop) || i < rounds*len(mine); i++ {
				p := mine[i%len(mine)]
				j := cl.next[p]
				cl.next[p]++
				if cl.tb.webhook(p, fmt.Sprintf("echo s%d-%d", p, j), fmt.Sprintf("SMs%015d%015d", p, j)) != http.StatusOK {
					b.Errorf("closed loop: person %d's webhook refused", p)
					return
				}
				select {
				case <-cl.waiting["whatsapp:"+cl.tb.numbers[p]]:
					answered.Add(1)
				case <-time.After(time.Minute):
					b.Errorf("closed loop: person %d had no answer in a minute", p)
					return
				}
			}
		})
	}
	wg.Wait()
	return int(answered.Load())
}
