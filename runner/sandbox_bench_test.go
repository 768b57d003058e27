package runner

import (
	"os"
	"testing"
	"time"
)

// What a sandbox adds to each program a run starts: `true` run bare (as
// textslash ran agents before), in a bubblewrap sandbox, and in one with
// a cgroup of limits. Reports wall time (ns/op) and the CPU the program
// and its sandbox took (cpu-ms/op).
func BenchmarkSandboxedTrue(b *testing.B) {
	ws, home := b.TempDir(), b.TempDir()
	box := &Sandbox{Limits: Limits{Memory: 256 << 20, Pids: 64, CPU: 1}}
	if err := box.probe(nil); err != nil {
		b.Skip(err)
	}
	limited := os.Geteuid() == 0 && cgroupsWritable() == nil
	for _, tc := range []struct {
		name string
		box  *Sandbox
		cg   bool
	}{{"bare", nil, false}, {"sandbox", box, false}, {"sandbox+cgroup", box, true}} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.cg && !limited {
				b.Skip("cgroups not writable")
			}
			var cpu time.Duration
			for b.Loop() {
				command := commandFunc(ws, home, nil, false)
				var cg *cgroup
				if tc.cg {
					var err error
					if cg, err = newCgroup("bench-"+newRunMark(), box.Limits, -1, -1); err != nil {
						b.Fatal(err)
					}
				}
				if tc.box != nil {
					command = confined(command, tc.box, ws, home, "", cg)
				}
				cmd := command(b.Context(), "true")
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				if cg != nil {
					cg.kill()
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
