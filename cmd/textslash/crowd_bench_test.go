package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/memory"
)

// How many people BenchmarkCrowd has write at once, and how long the
// scripted model takes over each answer.
const (
	crowdPeople = 12
	crowdAnswer = 20 * time.Second
)

// BenchmarkCrowd: crowdPeople people write to Claude Code (the real CLI,
// the scripted model taking crowdAnswer per answer) at the same moment,
// through the all-in-one, each their first message. A message is timed
// from its web chat POST to the model receiving its request. Reports
// crowd-max-ms and crowd-p50-ms, and the memory of textslash's whole
// process tree (procTree.pss, sampled every 100 ms): its peak
// (peak-tree-MB) and its growth over the crowd per person (MB/person: a
// warm CLI and its home, what the memory gate counts as 300 MB). "memory": the defaults (runs at once as far as memory goes);
// "four": TEXTSLASH_CONCURRENCY=4, the count the runner had before, which
// started them in waves of four; "room-1.5G": the defaults with
// TEXTSLASH_MEMORY_FREE set to leave the crowd 1.5 GB of what this machine
// has available, so that runs wait for memory: its tree-growth-MB must stay
// within those 1.5 GB (room-MB), or the gate let more in than it was sized
// for.
//
//	go test -run '^$' -bench Crowd -benchtime 1x ./cmd/textslash/
func BenchmarkCrowd(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("homes need root here (the agent user is made for it)")
	}
	b.Run("memory", func(b *testing.B) { benchCrowd(b) })
	b.Run("four", func(b *testing.B) { benchCrowd(b, "TEXTSLASH_CONCURRENCY=4") })
	b.Run("room-1.5G", func(b *testing.B) {
		const room = 1536 << 20
		free := memory.Available() - room
		b.ReportMetric(room>>20, "room-MB")
		benchCrowd(b, fmt.Sprintf("TEXTSLASH_MEMORY_FREE=%dM", free>>20))
	})
}

func benchCrowd(b *testing.B, env ...string) {
	var waits []time.Duration
	var peak, growth int64
	for range b.N {
		turns := make([]claudetest.Turn, crowdPeople)
		for i := range turns {
			turns[i] = claudetest.Text(fmt.Sprintf("answer %d", i)).After(crowdAnswer)
		}
		model := claudetest.NewModel(b, turns...)
		tree := newProcTree(b)
		inst := startClaude(b, model, append([]string{"TEXTSLASH_LOG_LEVEL=info"}, env...)...)
		tree.root = inst.cmd.Process.Pid
		ctx, cancel := context.WithCancel(context.Background())
		chats := make([]*chat, crowdPeople)
		events := make([]<-chan sseEvent, crowdPeople)
		for i := range chats {
			chats[i] = inst.newChat(b)
			events[i] = chats[i].events(ctx)
		}
		sent := make([]time.Time, crowdPeople)
		base := tree.pss()
		sampled := tree.samplePSS(ctx, 100*time.Millisecond)
		var wg sync.WaitGroup
		for i, c := range chats {
			wg.Go(func() {
				sent[i] = time.Now()
				id := c.send(fmt.Sprintf("crowd message #%02d", i))
				waitFor(b, events[i], crowdAnswer*time.Duration(crowdPeople)+2*time.Minute, func(ev sseEvent) bool {
					return ev.Kind == string(contract.KindDone) && ev.Event.JobID == id
				})
			})
		}
		wg.Wait()
		cancel()
		top := <-sampled
		peak, growth = max(peak, top), max(growth, top-base)
		for i := range chats {
			want := fmt.Sprintf("crowd message #%02d", i)
		requests:
			for _, r := range model.MainRequests() {
				for _, m := range r.Messages {
					for _, blk := range m.Content {
						if strings.Contains(blk.Text, want) {
							waits = append(waits, r.At.Sub(sent[i]))
							break requests
						}
					}
				}
			}
		}
		inst.stop()
	}
	if len(waits) != b.N*crowdPeople {
		b.Fatalf("found the model's request of %d of %d messages", len(waits), b.N*crowdPeople)
	}
	slices.Sort(waits)
	b.ReportMetric(ms(waits[len(waits)-1]), "crowd-max-ms")
	b.ReportMetric(ms(waits[len(waits)/2]), "crowd-p50-ms")
	b.ReportMetric(float64(peak>>20), "peak-tree-MB")
	b.ReportMetric(float64(growth>>20), "tree-growth-MB")
	b.ReportMetric(float64(growth>>20)/crowdPeople, "MB/person")
}
