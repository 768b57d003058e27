package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/textslash/textslash/contract"
)

// Limits bound one run: memory, processes and CPU, through a cgroup of the
// run's own (v2, or v1's memory, pids and cpu controllers), which every
// program of the run joins before it starts. A run that reaches its memory
// or process limit is ended and the person told which limit and how much
// the run used.
//
// The cgroup files are written directly: the handful this needs did not
// earn a cgroup library's dependencies.
type Limits struct {
	// Memory is the most memory in bytes.
	Memory int64
	// Pids is the most processes and threads at once: 0, or at least 16.
	Pids int
	// CPU is the most CPU time, in cores: 0, or at least 0.1.
	CPU float64
}

// validate checks the limits, named path in the Config.
func (l Limits) validate(path string) []error {
	var errs []error
	if l.Memory < 0 {
		errs = append(errs, contract.BadSetting(service, path+".Memory", l.Memory, "0 (no limit) or more"))
	}
	if l.Pids < 0 || (l.Pids > 0 && l.Pids < 16) {
		errs = append(errs, contract.BadSetting(service, path+".Pids", l.Pids, "0 (no limit) or at least 16"))
	}
	if l.CPU < 0 || (l.CPU > 0 && l.CPU < 0.1) {
		errs = append(errs, contract.BadSetting(service, path+".CPU", l.CPU, "0 (no limit) or at least 0.1"))
	}
	return errs
}

func (l Limits) zero() bool { return l.Memory <= 0 && l.Pids <= 0 && l.CPU <= 0 }

// cgroupRoot is where cgroups are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// Cgroup is one run's cgroup: one directory on v2, one per controller on
// v1.
type Cgroup struct {
	v2     bool
	memory string // directories, "" when that controller is not limited
	pids   string
	cpu    string
	limits Limits
	dirFD  *os.File // v2: the directory, for clone3 (CLONE_INTO_CGROUP)
	// The events counted before the run now in the cgroup (a home's
	// cgroup outlives its runs): see Begin.
	oomBefore, pidsBefore int64
}

// Begin starts a run in the cgroup: Exceeded counts only what happens
// from now on, and the memory peak is the run's.
func (cg *Cgroup) Begin() {
	if cg.memory != "" {
		cg.oomBefore = counter(cg.memory, cg.oomFile(), "oom_kill")
		peak := "memory.max_usage_in_bytes"
		if cg.v2 {
			peak = "memory.peak"
		}
		_ = os.WriteFile(filepath.Join(cg.memory, peak), []byte("0"), 0)
	}
	if cg.pids != "" {
		cg.pidsBefore = counter(cg.pids, "pids.events", "max")
	}
}

// oomFile is the memory controller's file counting OOM kills.
func (cg *Cgroup) oomFile() string {
	if cg.v2 {
		return "memory.events"
	}
	return "memory.oom_control"
}

// fd is the v2 cgroup's directory, opened once for every program of the
// run to be started in it.
func (cg *Cgroup) fd() (int, error) {
	if cg.dirFD == nil {
		d := cg.dirs()
		if len(d) == 0 {
			return -1, errors.New("no cgroup")
		}
		f, err := os.Open(d[0])
		if err != nil {
			return -1, err
		}
		cg.dirFD = f
	}
	return int(cg.dirFD.Fd()), nil
}

// cgroupsWritable reports whether this process can make cgroups for runs,
// and why not.
func cgroupsWritable() error {
	dirs := []string{cgroupRoot}
	if !isV2() {
		dirs = []string{filepath.Join(cgroupRoot, "memory"), filepath.Join(cgroupRoot, "pids"), filepath.Join(cgroupRoot, "cpu")}
	}
	for _, d := range dirs {
		dir := filepath.Join(d, "textslash")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		if err := canMakeIn(dir); err != nil {
			return err
		}
		if isV2() {
			// Children of textslash's cgroup may limit these.
			_ = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0)
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0); err != nil {
				return fmt.Errorf("cgroup %s: %w", dir, err)
			}
		}
	}
	return nil
}

// canMakeIn reports whether this process can make cgroups in dir, by
// making one and removing it: dir being there says nothing of who may
// write in it (a root runner's, and the next runner is not root).
func canMakeIn(dir string) error {
	probe := filepath.Join(dir, "probe-"+NewMark())
	if err := os.Mkdir(probe, 0o755); err != nil {
		if fi, serr := os.Stat(dir); serr == nil && errors.Is(err, os.ErrPermission) {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				return fmt.Errorf("cgroup %s is owned by %s, and uid %d may not make cgroups in it: %w", dir, userName(st.Uid), os.Geteuid(), err)
			}
		}
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	_ = os.Remove(probe) // left behind, the next runner's sweep removes it
	return nil
}

// userName is uid's user name, else uid.
func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username + " (uid " + id + ")"
	}
	return "uid " + id
}

func isV2() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}

// NewCgroup makes the cgroup of one run, named name, with limits l; the
// agent user (uid, gid; -1 when the run is textslash's own user) may move
// its own processes into it.
func NewCgroup(name string, l Limits, uid, gid int) (*Cgroup, error) {
	cg := &Cgroup{v2: isV2(), limits: l}
	mk := func(controller string) (string, error) {
		parent := filepath.Join(cgroupRoot, controller, "textslash", instance())
		if cg.v2 {
			parent = filepath.Join(cgroupRoot, "textslash", instance())
		}
		dir := filepath.Join(parent, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if cg.v2 {
			// The runner's cgroup passes the controllers on to its runs'.
			_ = os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0)
		}
		if uid >= 0 {
			if err := os.Chown(filepath.Join(dir, "cgroup.procs"), uid, gid); err != nil {
				return "", err
			}
		}
		return dir, nil
	}
	var err error
	write := func(dir, file, value string) {
		if err == nil {
			if werr := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); werr != nil {
				err = fmt.Errorf("cgroup %s: %w", file, werr)
			}
		}
	}
	if l.Memory > 0 {
		if cg.memory, err = mk("memory"); err != nil {
			return nil, err
		}
		if cg.v2 {
			write(cg.memory, "memory.max", strconv.FormatInt(l.Memory, 10))
			// No swap to spill into; a kernel without swap accounting has
			// no such file, which is no error.
			_ = os.WriteFile(filepath.Join(cg.memory, "memory.swap.max"), []byte("0"), 0)
		} else {
			write(cg.memory, "memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10))
			_ = os.WriteFile(filepath.Join(cg.memory, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(l.Memory, 10)), 0)
		}
	}
	if l.Pids > 0 && err == nil {
		if cg.pids, err = mk("pids"); err != nil {
			return nil, err
		}
		write(cg.pids, "pids.max", strconv.Itoa(l.Pids))
	}
	if l.CPU > 0 && err == nil {
		if cg.cpu, err = mk("cpu"); err != nil {
			return nil, err
		}
		quota := strconv.Itoa(int(l.CPU * 100000))
		if cg.v2 {
			write(cg.cpu, "cpu.max", quota+" 100000")
		} else {
			write(cg.cpu, "cpu.cfs_period_us", "100000")
			write(cg.cpu, "cpu.cfs_quota_us", quota)
		}
	}
	if err != nil {
		cg.remove()
		return nil, err
	}
	return cg, nil
}

// dirs are the cgroup's directories, each once.
func (cg *Cgroup) dirs() []string {
	var out []string
	for _, d := range []string{cg.memory, cg.pids, cg.cpu} {
		if d != "" && (len(out) == 0 || out[len(out)-1] != d) {
			out = append(out, d)
		}
	}
	return out
}

// joinArgs prefixes a command line with a shell that moves itself into
// the cgroup, then execs the command: every process the command starts is
// in the cgroup from its first instruction. (Moving the command's pid in
// after it started would let what it forks meanwhile escape.)
func (cg *Cgroup) joinArgs(name string, args []string) (string, []string) {
	const script = `for d; do [ "$d" = -- ] && break; echo $$ > "$d/cgroup.procs" || exit 125; shift; done; shift; exec "$@"`
	a := append([]string{"-c", script, "sh"}, cg.dirs()...)
	a = append(a, "--", name)
	return "/bin/sh", append(a, args...)
}

// Exceeded reports the limit the run reached, if any.
func (cg *Cgroup) Exceeded() *LimitError {
	if cg.memory != "" {
		if counter(cg.memory, cg.oomFile(), "oom_kill") > cg.oomBefore {
			peak := "memory.max_usage_in_bytes"
			if cg.v2 {
				peak = "memory.peak"
			}
			return &LimitError{What: "memory", Max: BytesText(cg.limits.Memory), Used: BytesText(int64(single(cg.memory, peak)))}
		}
	}
	if cg.pids != "" && counter(cg.pids, "pids.events", "max") > cg.pidsBefore {
		return &LimitError{What: "processes", Max: strconv.Itoa(cg.limits.Pids), Used: "all " + strconv.Itoa(cg.limits.Pids)}
	}
	return nil
}

// Kill ends every process left in the cgroup, then removes it.
func (cg *Cgroup) Kill() {
	if cg.dirFD != nil {
		cg.dirFD.Close()
	}
	for _, d := range cg.dirs() {
		if cg.v2 {
			_ = os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0)
			continue
		}
		for range 10 {
			data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			pids := strings.Fields(string(data))
			if err != nil || len(pids) == 0 {
				break
			}
			for _, p := range pids {
				if pid, err := strconv.Atoi(p); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cg.remove()
}

// remove deletes the cgroup's directories once they are empty.
func (cg *Cgroup) remove() {
	for _, d := range cg.dirs() {
		for range 50 {
			if err := os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(10 * time.Millisecond) // the killed are still exiting
		}
	}
}

// counter reads "key N" from a cgroup file of such lines.
func counter(dir, file, key string) int64 {
	data, _ := os.ReadFile(filepath.Join(dir, file))
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// single reads a cgroup file holding one number.
func single(dir, file string) uint64 {
	data, _ := os.ReadFile(filepath.Join(dir, file))
	n, _ := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return n
}

// BytesText is n bytes as a person reads it.
func BytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d KB", n>>10)
}
