package ingress_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/channels/twilio"

	"github.com/textslash/textslash/twiliotest"
)

// BenchmarkTwilioWebhook: signed webhooks through HTTP into JetStream (an
// embedded server storing to disk, as the all-in-one runs), answered once
// stored, from 1, 16 and 64 concurrent senders. Reports webhooks/s and ack
// latency percentiles.
//
//	go test -run x -bench TwilioWebhook -benchtime 20000x ./ingress/
func BenchmarkTwilioWebhook(b *testing.B) {
	for _, c := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
			h := startTwilioBench(b)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}
			// Signed requests are prepared up front: signing is the
			// sender's work, not textslash's.
			bodies := make([]string, b.N)
			sigs := make([]string, b.N)
			for i := range b.N {
				form := twiliotest.InboundParams(fmt.Sprintf("whatsapp:+1555123%04d", i%1000), "whatsapp:+15550000000", "echo hi", fmt.Sprintf("SMb%030d", i))
				bodies[i], sigs[i] = form.Encode(), twiliotest.Sign(token, publicURL+"/webhook", form)
			}
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var failed atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range c {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= b.N {
							return
						}
						req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/webhook", strings.NewReader(bodies[i]))
						req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
						req.Header.Set("X-Twilio-Signature", sigs[i])
						t0 := time.Now()
						resp, err := client.Do(req)
						if err != nil {
							failed.Add(1)
							continue
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						lat[i] = time.Since(t0)
						if resp.StatusCode != 200 {
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
			pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "webhooks/s")
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func startTwilioBench(b *testing.B) *twilioHarness {
	b.Helper()
	allowed := make([]string, 1000)
	for i := range allowed {
		allowed[i] = fmt.Sprintf("+1555123%04d", i)
	}
	return startTwilio(b, twilio.Config{Allowed: allowed})
}
