package sandbox

import (
	"os/exec"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// What one git command costs in a run's own sandbox (`git rev-parse
// --git-dir` in a repository), by its network: the host's (the runner's
// own git and a clone's or an answer's, before they had a network of
// their own), none (the runner's own git now), a RunNet (a clone's or an
// answer's now). Reports wall time (ns/op) and the CPU git and its
// sandbox took (cpu-ms/op).
func BenchmarkGitByNetwork(b *testing.B) {
	box := &Sandbox{}
	if err := box.Probe(nil); err != nil {
		b.Skip(err)
	}
	ws, home := b.TempDir(), b.TempDir()
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v: %s", err, out)
	}
	for _, name := range []string{"host", "offline", "runnet"} {
		b.Run(name, func(b *testing.B) {
			s := box
			switch name {
			case "offline":
				s = box.Offline()
			case "runnet":
				if ProbeHomes() != nil || netns.Probe(netns.Options{}) != nil {
					b.Skip("a run's network needs root and slirp4netns")
				}
				hs := &Homes{Network: &netns.Options{RefuseHost: true}, Dir: b.TempDir()}
				n, err := hs.RunNet(zerolog.Nop())
				if err != nil {
					b.Fatal(err)
				}
				defer n.Close()
				s = box.InNet(n)
			}
			command := Confined(CommandFunc(ws, home, nil, false), s, ws, home, "", nil)
			var cpu time.Duration
			for b.Loop() {
				cmd := command(b.Context(), "git", "rev-parse", "--git-dir")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("git: %v: %s", err, out)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkRunNet measures what a clone's or an answer's network costs
// once per run: its namespace's holder, slirp4netns started and the
// namespace configured (Homes.RunNet), then taken down (Close).
func BenchmarkRunNet(b *testing.B) {
	if ProbeHomes() != nil || netns.Probe(netns.Options{}) != nil {
		b.Skip("a run's network needs root and slirp4netns")
	}
	hs := &Homes{Network: &netns.Options{RefuseHost: true}, Dir: b.TempDir()}
	for b.Loop() {
		n, err := hs.RunNet(zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		n.Close()
	}
}
