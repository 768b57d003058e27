package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/twiliotest"
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

// BenchmarkWhatsAppWebhooks: signed WhatsApp webhooks from 64 concurrent
// senders (1,000 users) into the all-in-one, every service running: each
// message is stored, routed, run by the shell agent and answered through a
// fake Twilio API meanwhile. Reports webhooks/s, ack latency and the
// process's peak RSS; then waits for every reply.
//
//	go test -run x -bench WhatsAppWebhooks -benchtime 5000x ./cmd/textslash/
func BenchmarkWhatsAppWebhooks(b *testing.B) {
	const c = 64
	api := twiliotest.NewAPI(b, twiliotest.WithoutCallbacks())
	port := freePort(b)
	numbers := make([]string, 1000)
	for i := range numbers {
		numbers[i] = fmt.Sprintf("+1555123%04d", i)
	}
	inst := startServe(b, "PORT="+port, "PUBLIC_URL=http://127.0.0.1:"+port,
		"TWILIO_ACCOUNT_SID="+api.AccountSID, "TWILIO_AUTH_TOKEN="+api.AuthToken, "TWILIO_PHONE_NUMBER="+twilioFrom,
		"TEXTSLASH_TWILIO_API_URL="+api.URL, "ALLOWED_PHONE_NUMBERS="+strings.Join(numbers, ","),
		"TEXTSLASH_TWILIO_STATUS_CALLBACKS=false", "TEXTSLASH_AGENT=shell", "TEXTSLASH_LOG_LEVEL=warn")
	reqs := make([]*http.Request, b.N)
	for i := range reqs {
		form := twiliotest.InboundParams("whatsapp:"+numbers[i%len(numbers)], "whatsapp:"+twilioFrom, "echo ok", fmt.Sprintf("SMb%030d", i))
		reqs[i] = twiliotest.SignedRequest(api.AuthToken, inst.URL+"/webhook", inst.URL+"/webhook", form)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}
	lat := make([]time.Duration, b.N)
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
				t0 := time.Now()
				resp, err := client.Do(reqs[i])
				if err != nil {
					failed.Add(1)
					continue
				}
				resp.Body.Close()
				lat[i] = time.Since(t0)
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d webhooks failed", n)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "webhooks/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	// Every message gets its reply (and queued ones a "Got it" first).
	replies := func() int {
		n := 0
		for _, m := range api.Messages() {
			if m.Body == "ok" {
				n++
			}
		}
		return n
	}
	drain := time.Now()
	for replies() < b.N {
		if time.Since(drain) > 5*time.Minute {
			b.Fatalf("%d of %d replies after 5 minutes", replies(), b.N)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.ReportMetric(time.Since(start).Seconds(), "all-replied-s")
	b.ReportMetric(float64(peakRSSKB(b, inst.cmd.Process.Pid))/1024, "peak-RSS-MB")
	b.ReportMetric(0, "ns/op")
}

// peakRSSKB is the process's high-water resident memory.
func peakRSSKB(b testing.TB, pid int) int { return procStatus(b, pid, "VmHWM:") }

func rssKB(b testing.TB, pid int) int { return procStatus(b, pid, "VmRSS:") }

func procStatus(b testing.TB, pid int, field string) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	b.Fatal("no " + field)
	return 0
}
