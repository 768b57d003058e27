package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Runs' cgroups are made under one cgroup per runner process,
// textslash/r<pid>-<start>, named by its pid and its start time (so that a
// pid used again is another runner): a runner killed cannot remove its
// runs' cgroups, and the next to start on the machine removes those of
// the runners that are gone (sweepCgroups).

// instance is this runner's cgroup under textslash/.
var instance = sync.OnceValue(func() string {
	return fmt.Sprintf("r%d-%d", os.Getpid(), startTime(os.Getpid()))
})

// instanceRE matches a runner's cgroup name.
var instanceRE = regexp.MustCompile(`^r([0-9]+)-([0-9]+)$`)

// startTime is when process pid started, in clock ticks since boot (its
// /proc stat's 22nd field); 0 when it is gone.
func startTime(pid int) uint64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 20 {
		return 0
	}
	n, _ := strconv.ParseUint(f[19], 10, 64)
	return n
}

// alive reports whether the runner whose cgroup is name still runs.
func alive(name string) bool {
	m := instanceRE.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	pid, _ := strconv.Atoi(m[1])
	start, _ := strconv.ParseUint(m[2], 10, 64)
	return startTime(pid) == start
}

// sweepCgroups removes the cgroups of runners that are gone, and what is
// still in them; cgroups of runs left directly under textslash/ by
// versions before runner cgroups are removed when empty.
func sweepCgroups(log zerolog.Logger) {
	roots := []string{filepath.Join(cgroupRoot, "textslash")}
	if !isV2() {
		roots = []string{filepath.Join(cgroupRoot, "memory", "textslash"), filepath.Join(cgroupRoot, "pids", "textslash"), filepath.Join(cgroupRoot, "cpu", "textslash")}
	}
	removed, left := 0, 0
	for _, root := range roots {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			dir := filepath.Join(root, e.Name())
			switch {
			case !instanceRE.MatchString(e.Name()):
				if os.Remove(dir) == nil { // a run's, of an older version: only when empty
					removed++
				}
			case !alive(e.Name()):
				kids, _ := os.ReadDir(dir)
				for _, k := range kids {
					if k.IsDir() {
						killCgroup(filepath.Join(dir, k.Name()))
					}
				}
				killCgroup(dir)
				if _, err := os.Stat(dir); err == nil {
					left++
				} else {
					removed++
				}
			}
		}
	}
	if removed > 0 || left > 0 {
		log.Info().Int("removed", removed).Int("left", left).Msg("cgroups of runners gone (killed, crashed) removed")
	}
}

// killCgroup kills the processes in cgroup dir and removes it.
func killCgroup(dir string) {
	for range 50 {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return
		}
		pids := strings.Fields(string(data))
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if os.Remove(dir) == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
