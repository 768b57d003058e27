package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkWebChatRoundTrip: a web chat message posted → its reply on the
// event stream, with the shell agent (echo), through every service and
// JetStream. Reports the median and p90 of the round trips.
func BenchmarkWebChatRoundTrip(b *testing.B) {
	inst := startServe(b, "TEXTSLASH_AGENT=shell", "TEXTSLASH_LOG_LEVEL=info")
	c := inst.newChat(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := c.events(ctx)
	var took []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		id := c.send(fmt.Sprintf("echo %d", i))
		waitFor(b, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id })
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*9/10].Microseconds())/1000, "p90-ms")
}

// BenchmarkColdStart: `textslash serve` started → /readyz answers 200, with
// a fresh data directory; and its resident memory once idle.
func BenchmarkColdStart(b *testing.B) {
	var rss []int
	for b.Loop() {
		inst := startServe(b, "TEXTSLASH_AGENT=shell", "TEXTSLASH_LOG_LEVEL=warn")
		b.StopTimer()
		// Let it settle, then read its RSS as an idle process.
		time.Sleep(2 * time.Second)
		if resp, err := http.Get(inst.URL + "/healthz"); err == nil {
			resp.Body.Close()
		}
		rss = append(rss, rssKB(b, inst.cmd.Process.Pid))
		inst.stop()
		b.StartTimer()
	}
	slices.Sort(rss)
	b.ReportMetric(float64(rss[len(rss)/2])/1024, "idle-RSS-MB")
}

func rssKB(b testing.TB, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}
