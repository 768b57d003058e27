package agent

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/claudetest"
)

// firstRequest notes when the model receives the main conversation's
// requests, through a proxy in front of it.
type firstRequest struct {
	mu  sync.Mutex
	at  []time.Time
	srv *httptest.Server
}

func newFirstRequest(b *testing.B, m *claudetest.Model) *firstRequest {
	target, err := url.Parse(m.URL())
	if err != nil {
		b.Fatal(err)
	}
	f := &firstRequest{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" {
			f.mu.Lock()
			f.at = append(f.at, time.Now())
			f.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	b.Cleanup(f.srv.Close)
	return f
}

// since is how long after start the first Messages request came.
func (f *firstRequest) since(start time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, at := range f.at {
		if at.After(start) {
			return at.Sub(start)
		}
	}
	return 0
}

// cpuOf is the CPU time of process pid and its reaped children, from /proc.
func cpuOf(pid int) time.Duration {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime, after pid and comm
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}

// childrenCPU is the CPU time of this process's reaped children.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFollowUp measures a follow-up message with the real CLI
// against the scripted model: from the run's start (the message sent) to
// the model receiving its request (to_request_ms), and the CPU the CLI
// spends per follow-up (cli_cpu_ms), on a warm CLI and on one started per
// message with --resume.
func BenchmarkFollowUp(b *testing.B) {
	bin := claudetest.Binary(b)
	for _, warm := range []bool{true, false} {
		name := "cold"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			turns := make([]claudetest.Turn, b.N+1)
			for i := range turns {
				turns[i] = claudetest.Text("ok " + strconv.Itoa(i))
			}
			m := claudetest.NewModel(b, turns...)
			claudetest.Setenv(b, m)
			reqs := newFirstRequest(b, m)
			b.Setenv("ANTHROPIC_BASE_URL", reqs.srv.URL)
			r, _ := claudeRun(b, "")
			var w *Warm
			if warm {
				w = &Warm{}
				b.Cleanup(w.Close)
			}
			run := func(text, session string) Result {
				f := *r
				f.Job.Text, f.SessionID, f.Warm = text, session, w
				ctx, cancel := context.WithTimeout(context.Background(), claudeTimeout)
				defer cancel()
				res, err := (&Claude{Bin: bin}).Run(ctx, &f)
				if err != nil {
					b.Fatalf("run: %v", err)
				}
				return res
			}
			session := run("first", "").SessionID
			var toRequest, cpu time.Duration
			b.ResetTimer()
			for i := range b.N {
				before := childrenCPU()
				if warm {
					before = cpuOf(w.pid())
				}
				start := time.Now()
				res := run("follow-up "+strconv.Itoa(i), session)
				toRequest += reqs.since(start)
				if warm {
					cpu += cpuOf(w.pid()) - before
				} else {
					cpu += childrenCPU() - before
				}
				if res.Warm != warm {
					b.Fatalf("follow-up %d warm %t; want %t", i, res.Warm, warm)
				}
			}
			b.ReportMetric(float64(toRequest.Milliseconds())/float64(b.N), "to_request_ms")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cli_cpu_ms")
		})
	}
}
