package disk

import (
	"os"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/runner/internal/testkit"
	"github.com/textslash/textslash/runner/sandbox"
)

// BenchmarkHomeAmongDisks: a newcomer's home (bubblewrap's namespaces and
// its holder; no network) made and `true` run in it, while others' disks
// are mounted on the runner: 0, 100 and 400 of them. bubblewrap copies
// the runner's whole mount table into each sandbox and binds the host's
// root recursively (--ro-bind / /), so every disk mounted is copied into
// every home made, and the old root's copies torn down again. Reports the
// wall time of a home made (ns/op) and the CPU of every process that made
// it and ran `true` (cpu-ms/op: bubblewrap, nsenter, the holder, `true`,
// counted as each is reaped). On the 2-core development machine
// (2026-12-03): 19.7, 36.3 and 99.4 ms, and 6.3, 6.6 and 7.3 CPU-ms: the
// time grows by about 0.2 ms a disk, spent waiting in the kernel, not
// computing. Making <workspaces>/.disks an unbindable mount does not keep
// them out: inside bubblewrap 0.8 the mount is no longer unbindable, and
// what is under it is copied all the same (checked by hand).
func BenchmarkHomeAmongDisks(b *testing.B) {
	needLoop(b)
	if sandbox.ProbeHomes() != nil {
		b.Skip("homes need root")
	}
	box := &sandbox.Sandbox{}
	if err := box.Probe(nil); err != nil {
		b.Skip(err)
	}
	root := b.TempDir()
	d := openDisks(b, root, MinQuota)
	mounted := 0
	for _, n := range []int{0, 100, 400} {
		for ; mounted < n; mounted++ {
			key := "web.other" + strconv.Itoa(mounted)
			if _, err := d.Mount(b.Context(), key, bindsOf(root, key)); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(strconv.Itoa(n)+"-disks", func(b *testing.B) {
			hs := &sandbox.Homes{Max: 1}
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
				cmd := h.Confined(sandbox.CommandFunc(ws, home, nil, false))(b.Context(), "true")
				if err := cmd.Run(); err != nil {
					b.Fatal(err)
				}
				sandbox.EndGroup(cmd)
				leave()
			}
			hs.Close() // the last home's processes reaped, counted
			b.ReportMetric(float64((testkit.ChildCPU()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}
