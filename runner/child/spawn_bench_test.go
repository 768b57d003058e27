package child

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/internal/testkit"
)

// BenchmarkSpawnAmongFiles: what a program's start costs the runner for
// the files it holds open: `true` started and waited for, with 0, 2,000
// and 6,000 more files open here (pipes, as a home's are). Every fork
// copies the open files and every exec closes them again. Reports the
// CPU of this process and its children per start (cpu-ms/op). On the
// 2-core development machine, 2026-12-03: 1.65, 2.16 and 3.07 CPU-ms at
// one hour (a program of the same loop), 3.9-4.2, 4.1-4.4 and 4.7-5.2 an
// hour later: what an exec costs this virtual machine varies twofold
// through the day, what the files add stays about 1 ms.
func BenchmarkSpawnAmongFiles(b *testing.B) {
	var open []*os.File
	b.Cleanup(func() {
		for _, f := range open {
			f.Close()
		}
	})
	for _, n := range []int{0, 2000, 6000} {
		for len(open) < n {
			r, w, err := os.Pipe()
			if err != nil {
				b.Skipf("%d files open: %v", len(open), err)
			}
			open = append(open, r, w)
		}
		b.Run(strconv.Itoa(n)+"-files", func(b *testing.B) {
			cpu0 := cpu()
			for b.Loop() {
				if err := exec.Command("true").Run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpu()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpu is this process's CPU and that of its children reaped so far.
func cpu() time.Duration {
	var self syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	return time.Duration(self.Utime.Nano()+self.Stime.Nano()) + testkit.ChildCPU()
}
