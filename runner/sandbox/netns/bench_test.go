package netns

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAttach measures Attach (ns/op: waiting for bubblewrap's
// loopback, then slirp4netns's start to its ready byte, reported alone as
// slirp-ready-ms), the CPU slirp4netns and this process spent on it, and
// slirp4netns's resident memory once ready.
func BenchmarkAttach(b *testing.B) {
	needNamespaces(b)
	var slirpCPU, selfCPU, ready time.Duration
	var rss int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		pid, stop, err := newHome()
		if err != nil {
			b.Fatal(err)
		}
		before := selfTime()
		b.StartTimer()
		n, err := Attach(testLog(b).WithContext(context.Background()), pid, Options{})
		b.StopTimer()
		if err != nil {
			stop()
			b.Fatal(err)
		}
		selfCPU += selfTime() - before
		ready += n.slirp.startup
		slirpCPU += cpuTime(b, n.slirp.p.Pid)
		rss += rssKB(b, n.slirp.p.Pid)
		n.Close()
		stop()
	}
	b.ReportMetric(float64(ready.Microseconds())/1000/float64(b.N), "slirp-ready-ms")
	b.ReportMetric(float64(slirpCPU.Microseconds())/1000/float64(b.N), "slirp-cpu-ms/op")
	b.ReportMetric(float64(selfCPU.Microseconds())/1000/float64(b.N), "self-cpu-ms/op")
	b.ReportMetric(float64(rss)/float64(b.N), "slirp-rss-kB")
}

// BenchmarkDownload measures a bulk download from inside a home through
// slirp4netns, from a server on the machine's own non-loopback address
// (MB/s), and slirp4netns's CPU and memory doing it.
func BenchmarkDownload(b *testing.B) {
	needNamespaces(b)
	ip := hostAddress()
	if ip == "" {
		b.Skip("no non-loopback IPv4 address on this machine")
	}
	const size = 32 << 20
	addr := bulkServer(b, net.JoinHostPort(ip, "0"), size)
	n := attach(b, startHome(b), Options{})
	spid := n.slirp.p.Pid
	cpu0 := cpuTime(b, spid)
	buf := make([]byte, 256<<10)
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := n.Dial(context.Background(), "tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		got, err := io.CopyBuffer(io.Discard, c, buf)
		c.Close()
		if err != nil || got != size {
			b.Fatalf("downloaded %d bytes, %v; want %d", got, err, size)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b, spid)-cpu0).Microseconds())/1000/float64(b.N), "slirp-cpu-ms/op")
	b.ReportMetric(float64(rssKB(b, spid)), "slirp-rss-kB")
}

// bulkServer sends size bytes to every connection, then closes it.
func bulkServer(b *testing.B, addr string, size int) string {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	chunk := make([]byte, 256<<10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				for left := size; left > 0; left -= len(chunk) {
					if _, err := c.Write(chunk[:min(left, len(chunk))]); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// cpuTime is the CPU time a process's threads have used, from schedstat
// (nanoseconds, finer than clock ticks).
func cpuTime(b *testing.B, pid int) time.Duration {
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var total time.Duration
	for _, s := range stats {
		raw, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		ns, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
		if err != nil {
			b.Fatalf("%s: %v", s, err)
		}
		total += time.Duration(ns)
	}
	return total
}

// rssKB is a process's resident memory in kB.
func rssKB(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb
		}
	}
	b.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// selfTime is the CPU time this process has used.
func selfTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
