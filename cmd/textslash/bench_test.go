package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
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

// benchSeconds is how long each load of the Twilio benchmarks lasts after
// its warm-up: $TEXTSLASH_BENCH_SECONDS, 5 s unless set (scripts/bench
// sets 30).
func benchSeconds(b *testing.B) time.Duration {
	s := os.Getenv("TEXTSLASH_BENCH_SECONDS")
	if s == "" {
		return 5 * time.Second
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n <= 0 {
		b.Fatalf("TEXTSLASH_BENCH_SECONDS=%q: want a number of seconds", s)
	}
	return time.Duration(n * float64(time.Second))
}

// twilioBench is the all-in-one on WhatsApp with a fake Twilio API, users
// allowlisted numbers, and the shell agent as the instant agent (each
// message "echo <token>" is answered "<token>").
type twilioBench struct {
	api     *twiliotest.API
	inst    *instance
	numbers []string
	client  *http.Client
}

func startTwilioBench(b *testing.B, users int, env ...string) *twilioBench {
	return startTwilioBenchOn(b, nil, nil, users, env...)
}

// startTwilioBenchOn is startTwilioBench running argv (nil: textslash
// serve) and calling onMessage with each message the fake Twilio accepts.
func startTwilioBenchOn(b *testing.B, argv []string, onMessage func(twiliotest.Message), users int, env ...string) *twilioBench {
	opts := []twiliotest.Option{twiliotest.WithoutCallbacks(), twiliotest.Quiet()}
	if onMessage != nil {
		opts = append(opts, twiliotest.OnMessage(onMessage))
	}
	api := twiliotest.NewAPI(b, opts...)
	port := freePort(b)
	numbers := make([]string, users)
	for i := range numbers {
		numbers[i] = fmt.Sprintf("+1555%07d", i)
	}
	inst := startProgram(b, argv, append([]string{"PORT=" + port, "PUBLIC_URL=http://127.0.0.1:" + port,
		"TWILIO_ACCOUNT_SID=" + api.AccountSID, "TWILIO_AUTH_TOKEN=" + api.AuthToken, "TWILIO_PHONE_NUMBER=" + twilioFrom,
		"TEXTSLASH_TWILIO_API_URL=" + api.URL, "ALLOWED_PHONE_NUMBERS=" + strings.Join(numbers, ","),
		"TEXTSLASH_TWILIO_STATUS_CALLBACKS=false", "TEXTSLASH_AGENT=shell", "TEXTSLASH_LOG_LEVEL=warn"}, env...)...)
	return &twilioBench{api: api, inst: inst, numbers: numbers,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}}
}

// webhook posts one signed WhatsApp message from user i; it reports the
// HTTP status (0 on a transport error).
func (tb *twilioBench) webhook(user int, body, sid string) int {
	form := twiliotest.InboundParams("whatsapp:"+tb.numbers[user], "whatsapp:"+twilioFrom, body, sid)
	req := twiliotest.SignedRequest(tb.api.AuthToken, tb.inst.URL+"/webhook", tb.inst.URL+"/webhook", form)
	resp, err := tb.client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// BenchmarkWebhooks: signed WhatsApp webhooks from c concurrent senders (1,000
// users) into the all-in-one with every service running: each message is
// stored, routed, run by the instant agent (or refused with "Queue full"
// when its user already has 5 waiting) and answered through the fake
// Twilio meanwhile. A 200 means JetStream acknowledged the message. Each
// level has a fresh instance, 2 s of warm-up, then benchSeconds of load.
// Reports webhooks/s, ack p50/p99/max and the process's peak RSS.
//
//	go test -run '^$' -bench Webhooks ./cmd/textslash/
func BenchmarkWebhooks(b *testing.B) {
	for _, c := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			tb := startTwilioBench(b, 1000)
			var seq atomic.Int64
			load := func(d time.Duration) (lat []time.Duration, failed int) {
				var mu sync.Mutex
				var wg sync.WaitGroup
				stop := time.Now().Add(d)
				for range c {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var mine []time.Duration
						bad := 0
						for time.Now().Before(stop) {
							i := seq.Add(1)
							t0 := time.Now()
							if tb.webhook(int(i)%len(tb.numbers), "echo ok", fmt.Sprintf("SMb%030d", i)) != http.StatusOK {
								bad++
							}
							mine = append(mine, time.Since(t0))
						}
						mu.Lock()
						lat, failed = append(lat, mine...), failed+bad
						mu.Unlock()
					}()
				}
				wg.Wait()
				return lat, failed
			}
			load(2 * time.Second)
			d := benchSeconds(b)
			b.ResetTimer()
			start := time.Now()
			lat, failed := load(d)
			elapsed := time.Since(start)
			b.StopTimer()
			if failed > 0 {
				b.Fatalf("%d of %d webhooks failed", failed, len(lat))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "webhooks/s")
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
			b.ReportMetric(float64(peakRSSKB(b, tb.inst.cmd.Process.Pid))/1024, "peak-RSS-MB")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkEndToEnd: the overhead textslash adds to an instant agent, from
// a signed webhook sent to the reply's request at the fake Twilio, under an
// open-loop load of rate messages/s for benchSeconds from 5,000 users in
// turn (a user's messages are seconds apart: nobody waits behind their own
// earlier message).
// Reports p50/p99 and, to tell whether textslash kept up, the rate replies
// arrived at and how long the last one trailed the load.
//
//	go test -run '^$' -bench EndToEnd ./cmd/textslash/
func BenchmarkEndToEnd(b *testing.B) {
	for _, rate := range []int{200, 500} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			openLoop(b, startTwilioBench(b, 5000, "TEXTSLASH_CONCURRENCY=8"), rate, int(float64(rate)*benchSeconds(b).Seconds()))
		})
	}
}

// openLoop sends n signed webhooks at rate/s from tb's users in turn,
// each "echo t<i>", after a warm-up message from the last user; waits for
// the reply of every message taken and reports the latencies of the
// acknowledgements and of the replies, the rate replies arrived at, how
// long the last one trailed the load, which it returns (the drain) with
// the replies counted, and
// the webhooks refused (webhooks-refused: not stored within ingress's
// publish timeout, 503, which a saturated core causes). A backlog still
// there backlogWait after the load's end is reported as it stands
// (unanswered; replies/s then is those answered over the time since the
// start). A message taken and never answered fails the benchmark: one
// missing once the backlog is gone, or no reply for a minute.
func openLoop(b *testing.B, tb *twilioBench, rate, n int) (drain time.Duration, answered int) {
	users := len(tb.numbers)
	// Warm up: one round trip.
	if tb.webhook(users-1, "echo warm", "SMwarm") != http.StatusOK {
		b.Fatal("warm-up webhook refused")
	}
	tb.api.WaitMessages(b, 1, 30*time.Second)
	sent := make([]time.Time, n)
	acks := make([]time.Duration, n)
	taken := make([]bool, n)
	var failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); wait > 0 {
			time.Sleep(wait)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent[i] = time.Now()
			taken[i] = tb.webhook(i%users, fmt.Sprintf("echo t%d", i), fmt.Sprintf("SMe%030d", i)) == http.StatusOK
			if !taken[i] {
				failed.Add(1)
			}
			acks[i] = time.Since(sent[i])
		}()
	}
	wg.Wait()
	loadEnd := time.Now()
	refused := int(failed.Load())
	unanswered := awaitBacklog(b, tb, n+1-refused, loadEnd.Add(backlogWait))
	b.StopTimer()
	var lat []time.Duration
	var last time.Time
	natstest.CheckFor(b, 30*time.Second, 100*time.Millisecond, func() error {
		// A refused message stored after all (its acknowledgement late)
		// is answered too, maybe before one taken.
		lat, last = nil, time.Time{}
		replied := make([]bool, n)
		for _, m := range tb.api.Messages() {
			var i int
			if _, err := fmt.Sscanf(m.Body, "t%d", &i); err != nil || i < 0 || i >= n || replied[i] {
				continue
			}
			replied[i] = true
			lat = append(lat, m.At.Sub(sent[i]))
			if m.At.After(last) {
				last = m.At
			}
		}
		for i := range n {
			if unanswered == 0 && taken[i] && !replied[i] {
				return fmt.Errorf("%d replies of %d messages taken (%d refused); message %d taken, not answered", len(lat), n-refused, refused, i)
			}
		}
		return nil
	})
	if len(lat) == 0 {
		b.Fatalf("none of %d messages answered", n)
	}
	slices.Sort(lat)
	slices.Sort(acks)
	b.ReportMetric(ms(acks[len(acks)/2]), "ack-p50-ms")
	b.ReportMetric(ms(acks[len(acks)*99/100]), "ack-p99-ms")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(float64(len(lat))/last.Sub(start).Seconds(), "replies/s")
	b.ReportMetric(ms(max(0, last.Sub(loadEnd))), "tail-ms")
	b.ReportMetric(float64(unanswered), "unanswered")
	b.ReportMetric(float64(peakRSSKB(b, tb.inst.cmd.Process.Pid))/1024, "peak-RSS-MB")
	b.ReportMetric(float64(refused), "webhooks-refused")
	b.ReportMetric(0, "ns/op")
	return max(0, last.Sub(loadEnd)), len(lat)
}

// backlogWait is how long after an open loop's load its backlog may take
// to drain before it is reported as it stands.
const backlogWait = 2 * time.Minute

// awaitBacklog waits for want replies at tb's fake Twilio until the
// deadline and returns how many are missing then; none coming for a
// minute fails b.
func awaitBacklog(b *testing.B, tb *twilioBench, want int, deadline time.Time) int {
	got, moved := 0, time.Now()
	for {
		n := len(tb.api.Messages())
		if n >= want {
			return 0
		}
		if n > got {
			got, moved = n, time.Now()
		}
		if time.Since(moved) > time.Minute {
			b.Fatalf("no reply for a minute, %d of %d messages unanswered", want-n, want)
		}
		if time.Now().After(deadline) {
			return want - n
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

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
