package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/runner/child"
	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// Home is a sandbox made once and kept for a person's runs: bubblewrap's
// namespaces (mount, pid, ipc, uts, user and, when Homes.Network is set,
// network) held by a process that does nothing (the holder), and a cgroup
// with the runs' limits named by an opaque id. A run's programs enter the
// namespaces with nsenter, which costs a fork and an exec where a sandbox
// of its own costs bubblewrap's mount table, so a run in a warm home starts
// several times faster; what a program of the run leaves behind is ended
// with the run (EndRun), wherever it went.
//
// textslash without root enters them too, through the user namespace
// bubblewrap nests the home's in (enter.go).
type Home struct {
	id     string         // opaque: the cgroup's name, the logs'
	key    string         // the sandbox's command line, which the home was made for
	holder *child.Process // bubblewrap, the home's own (endHeld ends it)
	pid    int            // bwrap's child: the namespaces' first process
	own    []int          // the home's own processes: bwrap's two, the holder
	pidNS  string         // its pid namespace, as /proc names it
	// ns are its namespaces, opened once (nsNames): a program enters them
	// by these files, never by pid, which the kernel may hand to another
	// process once the home is gone.
	ns      *entry
	nsenter string
	user    *User
	cg      *Cgroup    // nil: runs are not limited
	net     *netns.Net // the home's network, when it has its own
	started time.Time

	mu    sync.Mutex
	users int       // runs in the home now
	last  time.Time // when the last run left
	kept  []int     // processes kept between runs (the warm agent)
	// background are the processes runs handed to the home on purpose
	// (StartBackground): kept, with all they start, until stopped.
	background []*Background
}

// nsNames are the namespaces a program of a home enters, as /proc names
// them (the user namespace first: the others belong to it).
var nsNames = []string{"user", "mnt", "net", "pid", "ipc", "uts"}

// homeReady is how long a home's bubblewrap has to say its child's pid.
const homeReady = 10 * time.Second

// homeNet is how homes are networked: slirp4netns with o, the resolver
// file resolv bound at /etc/resolv.conf.
type homeNet struct {
	o      netns.Options
	resolv string
}

// startHome makes the home whose programs see dir, home and bin as runs
// of box do; net, when set, gives it a network of its own; limits: the
// home gets a cgroup with box's limits.
func startHome(box *Sandbox, dir, home, bin string, u *User, limits bool, net *homeNet, log zerolog.Logger) (_ *Home, err error) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("%w: nsenter not found (util-linux)", ErrNoHome)
	}
	h := &Home{id: "h" + NewMark(), nsenter: nsenter, user: u, started: time.Now()}
	h.key = homeKey(box, dir, home, bin, u, net != nil)
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	if limits && !box.Limits.zero() {
		uid, gid := -1, -1
		if u != nil {
			uid, gid = int(u.UID), int(u.GID)
		}
		if h.cg, err = NewCgroup(h.id, box.Limits, uid, gid); err != nil {
			return nil, fmt.Errorf("home's cgroup: %w", err)
		}
	}
	w := wrapping{infoFD: true, chdir: "/"}
	if net != nil {
		w.ownNet, w.resolv = true, net.resolv
	}
	if err := h.startHolder(box, dir, home, bin, w); err != nil {
		return nil, err
	}
	if net != nil {
		ctx, cancel := context.WithTimeout(context.Background(), homeReady)
		defer cancel()
		if h.net, err = netns.Attach(log.With().Str("home", h.id).Logger().WithContext(ctx), h.pid, net.o); err != nil {
			return nil, fmt.Errorf("home's network: %w", err)
		}
	}
	return h, nil
}

// homeKey is what a home is made for: the same sandbox, the same places,
// the same user. A run whose sandbox differs (a person's credentials
// bound, another project) has a home of its own.
func homeKey(box *Sandbox, dir, home, bin string, u *User, ownNet bool) string {
	_, args := box.wrap(dir, home, bin, wrapping{ownNet: ownNet}, "")
	uid := "-"
	if u != nil {
		uid = strconv.Itoa(int(u.UID))
	}
	// A home binds directories, not names: a worktree removed and made
	// again at the same place is another directory, for another home.
	for _, d := range []string{dir, home} {
		if fi, err := os.Stat(d); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				uid += fmt.Sprintf("\x00%d:%d", st.Dev, st.Ino)
			}
		}
	}
	return uid + "\x00" + strings.Join(args, "\x00") + fmt.Sprintf("\x00%+v", box.Limits)
}

// startHolder starts bubblewrap with the holder (a shell waiting for its
// stdin to close) and reads the pid of its child from bwrap's info fd.
func (h *Home) startHolder(box *Sandbox, dir, home, bin string, w wrapping) error {
	// The holder says it runs (bwrap tells the pid before the sandbox's
	// mounts are made), then waits for its stdin to close.
	//
	// bwrap starts in the home's cgroup, on cgroup v1 through a shell
	// that joins it first (an exec more for every newcomer: 2.4 CPU-ms of
	// a home's 14 on the development machine). Started outside it, its
	// setup's CPU competed with textslash's own threads instead of
	// sharing the homes' group: with 5,000 newcomers, acknowledgements
	// went from 4 to 150-190 ms p50 and webhooks were refused.
	name, args := box.wrap(dir, home, bin, w, "/bin/sh", "-c", "echo; read _")
	if h.cg != nil && !h.cg.v2 {
		name, args = h.cg.joinArgs(name, args)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = "/"
	cmd.Env = Env(home, h.user, false)
	cmd.SysProcAttr = credential(h.user)
	if h.cg != nil && h.cg.v2 {
		if fd, err := h.cg.fd(); err == nil {
			cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		}
	}
	var err error
	if h.holder, h.pid, err = startHeld(cmd); err != nil {
		return fmt.Errorf("home: %w", err)
	}
	pid := h.pid
	// Orphans of runs become pid's children too: the holder is its only
	// one now.
	h.own = append([]int{h.holder.Pid, pid}, children(pid)...)
	if h.pidNS, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err != nil {
		return fmt.Errorf("home: %w", err)
	}
	if h.ns, err = openEntry(pid, nsNames...); err != nil {
		return fmt.Errorf("home: %w", err)
	}
	return nil
}

// readChildPID reads bwrap's info (JSON with "child-pid"), or fails when
// bwrap exits or takes too long.
func readChildPID(r *os.File, exited <-chan struct{}) (int, error) {
	type info struct {
		Pid int `json:"child-pid"`
	}
	got := make(chan info, 1)
	go func() {
		var i info
		_ = json.NewDecoder(r).Decode(&i)
		got <- i
	}()
	select {
	case i := <-got:
		if i.Pid <= 0 {
			return 0, errors.New("bubblewrap said no child pid")
		}
		return i.Pid, nil
	case <-exited:
		return 0, errors.New("bubblewrap ended")
	case <-time.After(homeReady):
		return 0, errors.New("bubblewrap did not start in time")
	}
}

// startHeld starts cmd, bubblewrap running a holder that writes a line
// once it runs and then waits on its stdin (bwrap tells its child's pid,
// on fd 3, before the sandbox is made). It returns bwrap and that pid once
// the holder runs. The holder's stdin is a pipe whose write end only the
// holder holds (its fd 4), so its read never ends and this process keeps
// no end of it: the holder ends with its pid namespace (endHeld), or with
// this process (bwrap's --die-with-parent). Its stdout and stderr are
// read until then and closed; the process is reaped by child, without
// Go's pidfd: a home keeps no file of its holder open here, as each file
// this process holds costs every program it starts.
func startHeld(cmd *exec.Cmd) (*child.Process, int, error) {
	var pipes [4][2]*os.File // info, out, errs, hold: read and write ends
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(pipes[:i])
			return nil, 0, err
		}
		pipes[i] = [2]*os.File{r, w}
	}
	info, out, errs := pipes[0][0], pipes[1][0], pipes[2][0]
	defer func() { info.Close(); out.Close(); errs.Close() }()
	cmd.Stdin = pipes[3][0]
	cmd.Stdout, cmd.Stderr = pipes[1][1], pipes[2][1]
	cmd.ExtraFiles = []*os.File{pipes[0][1], pipes[3][1]}
	p, err := child.Start(cmd)
	for _, f := range []*os.File{pipes[0][1], pipes[1][1], pipes[2][1], pipes[3][0], pipes[3][1]} {
		f.Close() // the holder's ends
	}
	if err != nil {
		return nil, 0, err
	}
	said := func() string { // what bwrap said on failing
		_ = errs.SetReadDeadline(time.Now().Add(time.Second)) // it may not have exited
		b := &output.CappedBuffer{Max: 4 << 10}
		_, _ = io.Copy(b, errs)
		return strings.TrimSpace(b.String())
	}
	fail := func(err error) (*child.Process, int, error) {
		_ = p.Kill()
		<-p.Done()
		return nil, 0, fmt.Errorf("%w: %s", err, said())
	}
	pid, err := readChildPID(info, p.Done())
	if err != nil {
		return fail(err)
	}
	if _, err := out.Read(make([]byte, 1)); err != nil {
		return fail(fmt.Errorf("the holder did not start: %w", err))
	}
	return p, pid, nil
}

// endHeld ends what startHeld started: the first process in bubblewrap's
// namespaces, by ns's pidfd (the pid namespace's init, where there is
// one: all in it end with it), then bubblewrap, which exits once its child
// has (killed if not within holderEnd, or when ns is nil).
func endHeld(holder *child.Process, ns *entry) {
	if ns != nil {
		ns.kill()
		select {
		case <-holder.Done():
			return
		case <-time.After(holderEnd):
		}
	}
	_ = holder.Kill()
	<-holder.Done()
}

// holderEnd is how long bubblewrap has to exit once its child has ended.
const holderEnd = time.Second

// closeAll closes both ends of each pipe.
func closeAll(pipes [][2]*os.File) {
	for _, p := range pipes {
		p[0].Close()
		p[1].Close()
	}
}

// Alive reports whether the home's holder still runs.
func (h *Home) Alive() bool {
	select {
	case <-h.holder.Done():
		return false
	default:
		return true
	}
}

// ID is the home's opaque id.
func (h *Home) ID() string { return h.id }

// Net is the home's network, nil when it is the host's.
func (h *Home) Net() *netns.Net { return h.net }

// Cgroup is the home's cgroup, nil when runs are not limited.
func (h *Home) Cgroup() *Cgroup { return h.cg }

// Confined wraps a run's command function so that every program runs in
// the home: nsenter enters its namespaces and becomes the agent user
// there (enter.go); the program joins the home's cgroup first.
func (h *Home) Confined(next func(ctx context.Context, name string, args ...string) *exec.Cmd) func(ctx context.Context, name string, args ...string) *exec.Cmd {
	return func(ctx context.Context, name string, args ...string) *exec.Cmd {
		cmd := next(ctx, name, args...)
		if cmd.Err != nil {
			return cmd
		}
		path, argv := h.ns.wrap(cmd, h.nsenter, cmd.Dir, cmd.Path, args)
		if h.cg != nil {
			if h.cg.v2 {
				if fd, err := h.cg.fd(); err == nil {
					cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
				}
			} else {
				path, argv = h.cg.joinArgs(path, argv)
			}
		}
		cmd.Path, cmd.Args = path, append([]string{path}, argv...)
		if cmd.Err == nil {
			confinedIn.Store(cmd, h)
		}
		return cmd
	}
}

// marked are the home's processes whose environment holds mark.
func (h *Home) marked(mark string) []int {
	return slices.DeleteFunc(h.members(), func(pid int) bool { return !carries(strconv.Itoa(pid), mark) })
}

// Keep names the processes that outlive runs (the warm agent, and the
// nsenter it runs under): EndRun leaves them running. Each call replaces
// the last; none keeps nothing.
func (h *Home) Keep(pids ...int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kept = pids
}

// EndRun ends every process in the home that is not the home's own,
// kept, or a background process's (StartBackground: the process and its
// descendants): all else a run started, setsid or double-forked, wherever
// it went. It looks again while it finds some (one may fork meanwhile).
func (h *Home) EndRun() {
	h.mu.Lock()
	keep := append(slices.Clone(h.kept), h.own...)
	bg := h.backgroundPids()
	h.mu.Unlock()
	// Until none is left: the killed take a moment to go (longer on a
	// busy machine), and one may fork meanwhile.
	for deadline := time.Now().Add(endRunWait); ; {
		var left []int
		for _, pid := range h.members() {
			if !slices.Contains(keep, pid) && !(len(bg) > 0 && descendsFrom(pid, bg)) {
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// endRunWait bounds how long EndRun waits for the processes it killed.
const endRunWait = 2 * time.Second

// members are the processes in the home's pid namespace (and the home's
// cgroup's, when it has one: nsenter's own process is outside the
// namespace).
func (h *Home) members() []int {
	var pids []int
	if h.cg != nil {
		// Every program of the home joins its cgroup (in each limited
		// controller) before it starts, and none can leave it (no run sees
		// the cgroup file system): one controller's list is all of them,
		// read for far less than every process's namespace.
		data, _ := os.ReadFile(filepath.Join(h.cg.dirs()[0], "cgroup.procs"))
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || slices.Contains(pids, pid) {
			continue
		}
		if ns, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && ns == h.pidNS {
			pids = append(pids, pid)
		}
	}
	return pids
}

// children are the child processes of pid.
func children(pid int) []int {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(data)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// IfUnused calls fn if no run is in the home, none entering meanwhile,
// and reports whether it did.
func (h *Home) IfUnused(fn func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.users > 0 {
		return false
	}
	fn()
	return true
}

// Touch counts now as a use of the home, as a run's end does: a home
// whose preview is in use is not let go for being idle.
func (h *Home) Touch() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.users == 0 {
		h.last = time.Now()
	}
}

// Memory is what the home's processes hold in memory: its cgroup's
// usage, else the resident sets of its processes.
func (h *Home) Memory() int64 {
	if h.cg != nil && h.cg.memory != "" {
		file := "memory.usage_in_bytes"
		if h.cg.v2 {
			file = "memory.current"
		}
		return int64(single(h.cg.memory, file))
	}
	var sum int64
	for _, pid := range h.members() {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
		if f := strings.Fields(string(data)); len(f) > 1 {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			sum += n * int64(os.Getpagesize())
		}
	}
	return sum
}

// Close takes the home down: every process in it, its network and its
// cgroup.
func (h *Home) Close() {
	h.StopBackground("")
	if h.holder != nil {
		endHeld(h.holder, h.ns)
	}
	if h.pidNS != "" {
		h.mu.Lock()
		h.kept = nil
		h.mu.Unlock()
		h.EndRun()
	}
	if h.net != nil {
		_ = h.net.Close()
	}
	if h.cg != nil {
		h.cg.Kill()
	}
	if h.ns != nil {
		h.ns.close()
	}
}
