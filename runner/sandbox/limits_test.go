package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
)

// A run's cgroup holds its limits — memory, processes and CPU — and its
// programs from their first instruction, and is gone once killed.
func TestCgroupLimits(t *testing.T) {
	if os.Geteuid() != 0 || cgroupsWritable() != nil {
		t.Skip("needs writable cgroups (root)")
	}
	box := &Sandbox{}
	if err := box.Probe(nil); err != nil {
		t.Skip(err)
	}
	l := Limits{Memory: 300 << 20, Pids: 77, CPU: 1.5}
	name := "test-" + NewMark()
	cg, err := NewCgroup(name, l, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		filepath.Join(cg.pids, "pids.max"): "77",
	}
	if cg.v2 {
		files[filepath.Join(cg.memory, "memory.max")] = "314572800"
		files[filepath.Join(cg.cpu, "cpu.max")] = "150000 100000"
	} else {
		files[filepath.Join(cg.memory, "memory.limit_in_bytes")] = "314572800"
		files[filepath.Join(cg.cpu, "cpu.cfs_quota_us")] = "150000"
	}
	for f, want := range files {
		if got, _ := os.ReadFile(f); strings.TrimSpace(string(got)) != want {
			t.Errorf("%s = %q; want %q", f, strings.TrimSpace(string(got)), want)
		}
	}
	ws, home := t.TempDir(), t.TempDir()
	cmd := Confined(CommandFunc(ws, home, nil, false), box, ws, home, "", cg)(t.Context(), "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The program's first process (the shell that joins, then bwrap) is in
	// every controller's cgroup, so all it starts is too.
	for _, d := range cg.dirs() {
		natstest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
			procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			if !slices.Contains(strings.Fields(string(procs)), strconv.Itoa(cmd.Process.Pid)) {
				return fmt.Errorf("%s holds %q; want the run's process %d", d, procs, cmd.Process.Pid)
			}
			return nil
		})
	}
	if lim := cg.Exceeded(); lim != nil {
		t.Errorf("a run of cat reached a limit: %v", lim)
	}
	cg.Kill()
	for _, d := range cg.dirs() {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left behind (%v)", d, err)
		}
	}
}
