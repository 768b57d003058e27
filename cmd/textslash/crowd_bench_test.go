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
// crowd-max-ms and crowd-p50-ms. "memory": the defaults (runs at once as
// far as memory goes); "four": TEXTSLASH_CONCURRENCY=4, the count the
// runner had before, which started them in waves of four.
//
//	go test -run '^$' -bench Crowd -benchtime 1x ./cmd/textslash/
func BenchmarkCrowd(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("homes need root here (the agent user is made for it)")
	}
	b.Run("memory", func(b *testing.B) { benchCrowd(b) })
	b.Run("four", func(b *testing.B) { benchCrowd(b, "TEXTSLASH_CONCURRENCY=4") })
}

func benchCrowd(b *testing.B, env ...string) {
	var waits []time.Duration
	for range b.N {
		turns := make([]claudetest.Turn, crowdPeople)
		for i := range turns {
			turns[i] = claudetest.Text(fmt.Sprintf("answer %d", i)).After(crowdAnswer)
		}
		model := claudetest.NewModel(b, turns...)
		inst := startClaude(b, model, append([]string{"TEXTSLASH_LOG_LEVEL=info"}, env...)...)
		ctx, cancel := context.WithCancel(context.Background())
		chats := make([]*chat, crowdPeople)
		events := make([]<-chan sseEvent, crowdPeople)
		for i := range chats {
			chats[i] = inst.newChat(b)
			events[i] = chats[i].events(ctx)
		}
		sent := make([]time.Time, crowdPeople)
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
}
