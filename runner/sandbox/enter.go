package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// A program joins a home's namespaces (or a RunNet's network) with
// nsenter, by the files the home holds open, passed from fd 3 on: never by
// pid, which the kernel may give another process once the home is gone.
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
// uid, its capabilities dropped at exec.

// entry is how programs enter a set of namespaces.
type entry struct {
	// ns are the namespaces, by nsenter's name for each, user first.
	ns    []*os.File
	flags []string
	// outer is the user namespace owning the others, when this process
	// is not root (nil as root).
	outer *os.File
}

// openEntry opens the namespaces names (as /proc names them, "user"
// first) of process pid but those it shares with this process (a home on
// the host's network), and, when this process is not root, the user
// namespace owning the second.
func openEntry(pid int, names ...string) (*entry, error) {
	e := &entry{}
	for _, name := range names {
		f, err := os.Open(fmt.Sprintf("/proc/%d/ns/%s", pid, name))
		if err != nil {
			e.close()
			return nil, err
		}
		if same(f, "/proc/self/ns/"+name) {
			f.Close()
			continue
		}
		e.ns = append(e.ns, f)
		e.flags = append(e.flags, nsFlags[name])
	}
	if os.Geteuid() != 0 && len(e.ns) > 1 {
		fd, err := unix.IoctlRetInt(int(e.ns[1].Fd()), unix.NS_GET_USERNS)
		if err != nil {
			e.close()
			return nil, fmt.Errorf("the user namespace owning pid %d's: %w", pid, err)
		}
		e.outer = os.NewFile(uintptr(fd), "userns")
	}
	return e, nil
}

// same reports whether the namespace f is the one at path.
func same(f *os.File, path string) bool {
	var a, b unix.Stat_t
	return unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat(path, &b) == nil && a.Dev == b.Dev && a.Ino == b.Ino
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
	first := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, e.ns...)
	fd := func(i int) string { return "/proc/self/fd/" + strconv.Itoa(first+i) }
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL // as bubblewrap's --die-with-parent
	var a []string
	if e.outer == nil {
		for i, flag := range e.flags {
			a = append(a, "--"+flag+"="+fd(i))
		}
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
	cmd.ExtraFiles = append(cmd.ExtraFiles, e.outer)
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

func (e *entry) close() {
	for _, f := range e.ns {
		f.Close()
	}
	if e.outer != nil {
		e.outer.Close()
	}
}
