package pageshot

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
)

// How CPU is counted. Chromium is a tree of processes (browser, zygotes,
// renderers, GPU and network services), and the renderer of each tab exits
// with the tab. treeCPU sums utime+stime+cutime+cstime of every live process
// under the browser's pid from /proc/<pid>/stat: cutime/cstime carry the
// time of children that exited and were reaped inside the tree (the zygote
// reaps renderers), so closed tabs still count. The browser is not our child
// until it exits, so RUSAGE_CHILDREN does not see it while it runs; and when
// it is killed its children are orphaned and reaped by init, so
// RUSAGE_CHILDREN misses them even then. Warm: treeCPU before and after the
// loop. Cold: treeCPU of each new browser right after its shot (launch and
// shot, not the shutdown). The Go side (CDP, base64 and JSON of the image)
// is RUSAGE_SELF, reported apart.

// clockTicks is USER_HZ, 100 on every Linux that Go runs on.
const clockTicks = 100

// proc is a live process as /proc/<pid>/stat tells of it.
type proc struct {
	ppid int
	// ticks is utime+stime+cutime+cstime, in clock ticks.
	ticks float64
}

// procs are the live processes by pid.
func procs() map[int]proc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	ps := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after "(comm)": state ppid … utime(14) stime cutime cstime.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 15 {
			continue
		}
		p := proc{}
		p.ppid, _ = strconv.Atoi(f[1])
		for _, v := range f[11:15] {
			n, _ := strconv.ParseFloat(v, 64)
			p.ticks += n
		}
		ps[pid] = p
	}
	return ps
}

// under reports whether pid is root or runs under it.
func under(ps map[int]proc, pid, root int) bool {
	for p := pid; p > 1; p = ps[p].ppid {
		if p == root {
			return true
		}
	}
	return false
}

// treeCPU is the CPU time, in seconds, of root and every live process under it.
func treeCPU(root int) float64 {
	ps := procs()
	var sum float64
	for pid, p := range ps {
		if under(ps, pid, root) {
			sum += p.ticks
		}
	}
	return sum / clockTicks
}

func rusage(who int) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// report adds p50/p90 of the shot times and per-shot CPU and bytes.
func report(b *testing.B, times []time.Duration, chromeCPU, goCPU float64, bytes int) {
	slices.Sort(times)
	n := float64(len(times))
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*9/10].Microseconds())/1000, "p90-ms")
	b.ReportMetric(chromeCPU/n, "chrome-cpu-s/shot")
	b.ReportMetric(goCPU/n, "go-cpu-s/shot")
	b.ReportMetric(float64(bytes)/n, "jpeg-B/shot")
}

// BenchmarkCaptureWarm: shots in one warm browser and its kept tab;
// "mobile" (a mobile viewport) is the one with targets (p50 ≤ 200 ms,
// ≤ 0.3 CPU-s per shot on 2 cores).
func BenchmarkCaptureWarm(b *testing.B) {
	for _, bc := range []struct {
		name string
		o    Options
		// people: shots alternate between two people's profiles, each
		// in a browser context of its own (a new tab at each switch).
		people bool
	}{
		{"mobile", Options{URL: "/"}, false},
		{"mobile-two-people", Options{URL: "/"}, true},
		{"desktop", Options{URL: "/", Desktop: true}, false},
		{"mobile-tall-viewport", Options{URL: "/tall"}, false},
		{"mobile-tall-fullpage", Options{URL: "/tall", FullPage: true}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			br := newBrowser(b, 20*time.Second)
			o := bc.o
			o.URL = pages(b).URL + o.URL
			if _, err := br.Capture(b.Context(), o); err != nil {
				b.Fatal(err)
			}
			pid := br.pid()
			var times []time.Duration
			size := 0
			chrome0, go0 := treeCPU(pid), rusage(syscall.RUSAGE_SELF)
			n := 0
			for b.Loop() {
				if n++; bc.people {
					o.Profile = []string{"web.a", "web.b"}[n%2]
				}
				start := time.Now()
				s, err := br.Capture(b.Context(), o)
				if err != nil {
					b.Fatal(err)
				}
				times = append(times, time.Since(start))
				size += len(s.JPEG)
			}
			report(b, times, treeCPU(pid)-chrome0, rusage(syscall.RUSAGE_SELF)-go0, size)
		})
	}
}

// BenchmarkCaptureCold: the same shot in a browser launched for it.
func BenchmarkCaptureCold(b *testing.B) {
	bin := shottest.Chromium(b)
	srv := pages(b)
	o := Options{URL: srv.URL + "/"}
	var times []time.Duration
	size := 0
	chrome, go0 := 0.0, rusage(syscall.RUSAGE_SELF)
	for b.Loop() {
		br := New(Config{Bin: bin, NoSandbox: os.Geteuid() == 0})
		start := time.Now()
		s, err := br.Capture(b.Context(), o)
		if err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		size += len(s.JPEG)
		chrome += treeCPU(br.pid())
		br.Close()
	}
	report(b, times, chrome, rusage(syscall.RUSAGE_SELF)-go0, size)
}
