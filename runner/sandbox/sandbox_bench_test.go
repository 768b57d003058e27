package sandbox

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/runner/internal/testkit"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// What a sandbox adds to each program a run starts: `true` run bare (as
// textslash ran agents before), in a bubblewrap sandbox, in one with a
// cgroup of limits, and in a warm home (with and without its cgroup),
// ending the run there each time. Reports wall time (ns/op) and the CPU
// the program and its sandbox took (cpu-ms/op).
func BenchmarkSandboxedTrue(b *testing.B) {
	ws, home := b.TempDir(), b.TempDir()
	box := &Sandbox{Limits: Limits{Memory: 256 << 20, Pids: 64, CPU: 1}}
	if err := box.Probe(nil); err != nil {
		b.Skip(err)
	}
	limited := os.Geteuid() == 0 && cgroupsWritable() == nil
	for _, tc := range []struct {
		name string
		box  *Sandbox
		cg   bool
	}{{"bare", nil, false}, {"sandbox", box, false}, {"sandbox+cgroup", box, true}, {"home", box, false}, {"home+cgroup", box, true}, {"home-cold", box, false}, {"home-cold+net", box, false}, {"home-cold+net+cgroup", box, true}} {
		b.Run(tc.name, func(b *testing.B) {
			if tc.cg && !limited {
				b.Skip("cgroups not writable")
			}
			var cpu time.Duration
			if strings.HasPrefix(tc.name, "home-cold") {
				cpu = benchColdHome(b, tc.box, strings.Contains(tc.name, "+net"), tc.cg)
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
				return
			}
			if strings.HasPrefix(tc.name, "home") {
				cpu = benchHome(b, tc.box, ws, home, tc.cg)
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
				return
			}
			for b.Loop() {
				command := CommandFunc(ws, home, nil, false)
				var cg *Cgroup
				if tc.cg {
					var err error
					if cg, err = NewCgroup("bench-"+NewMark(), box.Limits, -1, -1); err != nil {
						b.Fatal(err)
					}
				}
				if tc.box != nil {
					command = Confined(command, tc.box, ws, home, "", cg)
				}
				cmd := command(b.Context(), "true")
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				if cg != nil {
					cg.Kill()
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// benchHome runs `true` in a warm home b.N times, ending the run each
// time, and returns the CPU the programs took.
func benchHome(b *testing.B, box *Sandbox, ws, home string, limited bool) time.Duration {
	if ProbeHomes() != nil {
		b.Skip("homes need root")
	}
	hs := &Homes{Limited: limited}
	defer hs.Close()
	h, leave, err := hs.Enter(box, ws, home, "", nil, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	leave()
	command := h.Confined(CommandFunc(ws, home, nil, false))
	var cpu time.Duration
	for b.Loop() {
		h, leave, err := hs.Enter(box, ws, home, "", nil, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		cmd := command(b.Context(), "true")
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		EndGroup(cmd)
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		leave()
		_ = h
	}
	return cpu
}

// benchColdHome makes a home for each of b.N people (a directory each),
// with its network and its cgroup when asked, runs `true` in it and lets
// it go (Max 1): a person's first message. It returns the CPU of every
// program that took part (bubblewrap, the holder, slirp4netns, nsenter,
// the shell joining the cgroup, `true`), counted as each is reaped.
func benchColdHome(b *testing.B, box *Sandbox, network, limited bool) time.Duration {
	if ProbeHomes() != nil {
		b.Skip("homes need root")
	}
	hs := &Homes{Max: 1, Limited: limited}
	if network {
		if err := netns.Probe(netns.Options{}); err != nil {
			b.Skip(err)
		}
		hs.Network, hs.Dir = &netns.Options{RefuseHost: true}, b.TempDir()
	}
	defer hs.Close()
	home := b.TempDir()
	cpu0 := testkit.ChildCPU()
	for b.Loop() {
		ws, err := os.MkdirTemp(home, "ws")
		if err != nil {
			b.Fatal(err)
		}
		h, leave, err := hs.Enter(box, ws, home, "", nil, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		cmd := h.Confined(CommandFunc(ws, home, nil, false))(b.Context(), "true")
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		EndGroup(cmd)
		leave()
	}
	hs.Close() // the last home's processes reaped, counted
	return testkit.ChildCPU() - cpu0
}
