package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// A program joins a home's namespaces (or a RunNet's network) with
// nsenter, as root by path (/proc/<pid>/ns/<name>), checked first: pid's
// process lives (a pidfd of it says so: a pid goes to another process only
// once its own has ended) and each namespace is the home's (its inode).
// No file of them stays open here, as every program started pays for each.
//
// An unprivileged bubblewrap nests two user namespaces: an outer one, in
// which bubblewrap's user is root and which owns the mount, network, pid,
// ipc and uts namespaces, and an inner one the sandbox's programs run in,
// as that user. Root enters them all at once and drops to the agent user
// inside. A runner that is not root has no power over the other
// namespaces from the inner user namespace, only from the outer one, in
// which its uid is root: so one nsenter enters the outer user namespace
// and the others (keeping its credentials, which are root's there), and a
// second enters the inner one, where the program runs as the runner's own
// uid, its capabilities dropped at exec. The second runs in the home's
// mount namespace, where /proc is the home's: so without root the
// namespaces are entered by files held open, passed from fd 3 on.

// errHomeGone fails a program whose namespaces' process has ended.
var errHomeGone = errors.New("sandbox: the home's namespaces are gone (its process ended)")

// entry is how programs enter a set of namespaces.
type entry struct {
	pid   int
	pidfd int // pid's process, held while the namespaces are in use
	// names are the namespaces as /proc names them, user first; inos
	// their inodes at the start; flags nsenter's name for each.
	names []string
	inos  []uint64
	flags []string
	// ns are the namespaces' files, held open when this process is not
	// root (nil as root); outer is the user namespace owning the others.
	ns    []*os.File
	outer *os.File
}

// openEntry readies entering the namespaces names (as /proc names them,
// "user" first) of process pid but those it shares with this process (a
// home on the host's network), and, when this process is not root, opens
// them and the user namespace owning the second.
func openEntry(pid int, names ...string) (*entry, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("pidfd of %d: %w", pid, err)
	}
	e := &entry{pid: pid, pidfd: fd}
	root := os.Geteuid() == 0
	for _, name := range names {
		var st, self unix.Stat_t
		if err := unix.Stat(e.path(name), &st); err != nil {
			e.close()
			return nil, err
		}
		if unix.Stat("/proc/self/ns/"+name, &self) == nil && st.Dev == self.Dev && st.Ino == self.Ino {
			continue
		}
		e.names, e.inos, e.flags = append(e.names, name), append(e.inos, st.Ino), append(e.flags, nsFlags[name])
		if !root {
			f, err := os.Open(e.path(name))
			if err != nil {
				e.close()
				return nil, err
			}
			e.ns = append(e.ns, f)
		}
	}
	if !root && len(e.ns) > 1 {
		fd, err := unix.IoctlRetInt(int(e.ns[1].Fd()), unix.NS_GET_USERNS)
		if err != nil {
			e.close()
			return nil, fmt.Errorf("the user namespace owning pid %d's: %w", pid, err)
		}
		e.outer = os.NewFile(uintptr(fd), "userns")
	}
	if err := e.check(); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// path is where /proc shows namespace name of the entry's process.
func (e *entry) path(name string) string { return fmt.Sprintf("/proc/%d/ns/%s", e.pid, name) }

// check says whether the entry's process still lives and is in the
// namespaces it was in.
func (e *entry) check() error {
	if e.pidfd < 0 || unix.PidfdSendSignal(e.pidfd, 0, nil, 0) != nil {
		return errHomeGone
	}
	for i, name := range e.names {
		var st unix.Stat_t
		if unix.Stat(e.path(name), &st) != nil || st.Ino != e.inos[i] {
			return errHomeGone
		}
	}
	return nil
}

// nsFlags is nsenter's option for each namespace, as /proc names it.
var nsFlags = map[string]string{"user": "user", "mnt": "mount", "net": "net", "pid": "pid", "ipc": "ipc", "uts": "uts"}

// wrap makes cmd run path argv inside the namespaces, in directory wd
// there (none: where nsenter starts), as cmd's credential (the agent
// user; none: as this process's uid).
func (e *entry) wrap(cmd *exec.Cmd, nsenter, wd, path string, argv []string) (string, []string) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL // as bubblewrap's --die-with-parent
	if err := e.check(); err != nil && cmd.Err == nil {
		cmd.Err = err // Start refuses it
	}
	first := 3 + len(cmd.ExtraFiles)
	fd := func(i int) string { return "/proc/self/fd/" + strconv.Itoa(first+i) }
	var a []string
	if e.outer == nil {
		for i, flag := range e.flags {
			if e.ns == nil { // root: by path
				a = append(a, "--"+flag+"="+e.path(e.names[i]))
			} else {
				a = append(a, "--"+flag+"="+fd(i))
			}
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, e.ns...)
		if wd != "" {
			a = append(a, "--wdns="+wd)
		}
		if c := cmd.SysProcAttr.Credential; c != nil {
			a = append(a, "-S", strconv.Itoa(int(c.Uid)), "-G", strconv.Itoa(int(c.Gid)))
			cmd.SysProcAttr.Credential = nil // nsenter needs root to enter; it drops to the user inside
		} else {
			a = append(a, "--preserve-credentials")
		}
		return nsenter, append(append(a, "--", path), argv...)
	}
	cmd.ExtraFiles = append(append(cmd.ExtraFiles, e.ns...), e.outer)
	a = append(a, "--user="+fd(len(e.ns)))
	for i, flag := range e.flags[1:] {
		a = append(a, "--"+flag+"="+fd(i+1))
	}
	if wd != "" {
		a = append(a, "--wdns="+wd)
	}
	a = append(a, "--preserve-credentials", "--", nsenter, "--user="+fd(0), "--preserve-credentials", "--", path)
	return nsenter, append(a, argv...)
}

// kill ends the process whose namespaces these are, by its pidfd (a pid
// namespace's first process: everything in the namespace with it).
func (e *entry) kill() {
	if e.pidfd >= 0 {
		_ = unix.PidfdSendSignal(e.pidfd, unix.SIGKILL, nil, 0)
	}
}

func (e *entry) close() {
	if e.pidfd >= 0 {
		unix.Close(e.pidfd)
		e.pidfd = -1
	}
	for _, f := range e.ns {
		f.Close()
	}
	if e.outer != nil {
		e.outer.Close()
	}
}
