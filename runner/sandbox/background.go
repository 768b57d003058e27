package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Background is a process a run handed to its home on purpose (`textslash
// background npm run dev`): it outlives the run, in the home's namespaces
// and cgroup (under its limits), until it is stopped (StopBackground), or
// the home is taken down. Everything else a run starts still ends with
// the run (EndRun).
type Background struct {
	ID      string    // 4 hex digits, unique in the home: what `stop <id>` names
	Command string    // the command line, as given
	Log     string    // where its output goes, relative to its directory
	Started time.Time // when it started
	pid     int       // its first process, on the host (nsenter's)
	exited  chan struct{}
}

// Running reports whether the process has not exited yet.
func (b *Background) Running() bool {
	select {
	case <-b.exited:
		return false
	default:
		return true
	}
}

// BackgroundLogDir is where, in the directory a background process runs
// in (the workspace), its output file is: <id>.log.
const BackgroundLogDir = ".textslash/background"

// BackgroundCall is what a run asks for (`textslash background npm run
// dev`): the command, and where it is asked from.
type BackgroundCall struct {
	Argv []string
	// Dir is the caller's directory, in the workspace; "": the
	// workspace's root.
	Dir string
	// Env is the caller's environment; nil: the run's.
	Env []string
}

// StartBackground starts c's command in the home through command (the
// run's command function, Confined to the home) in c's directory, beneath
// command's directory (the workspace; one outside it is refused), with
// c's environment; its output is appended to BackgroundLogDir/<id>.log
// in the workspace. The redirection, the change of directory and the
// environment are made inside the home, as the agent's user, so textslash
// opens nothing the agent names and runs nothing (nsenter, as root) with
// the agent's environment. The process and all it starts are kept by
// EndRun.
func (h *Home) StartBackground(command func(ctx context.Context, name string, args ...string) *exec.Cmd, c BackgroundCall) (*Background, error) {
	if len(c.Argv) == 0 {
		return nil, ErrNoCommand
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.Alive() {
		return nil, ErrHomeGone
	}
	b := &Background{ID: h.newBackgroundID(), Command: strings.Join(c.Argv, " "), Started: time.Now(), exited: make(chan struct{})}
	b.Log = BackgroundLogDir + "/" + b.ID + ".log"
	// The shell makes the log's directory and sends its output there,
	// goes to the caller's directory, then becomes the command.
	script := `mkdir -p "$0" && exec >>"$0/` + b.ID + `.log" 2>&1 </dev/null && cd "$1" && shift && exec "$@"`
	cmd := command(context.Background(), "/bin/sh", "-c", script, BackgroundLogDir)
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	rel, err := beneath(cmd.Dir, c.Dir)
	if err != nil {
		return nil, err
	}
	// The rest of the shell's arguments: a wrapper (nsenter, a cgroup's
	// shell) ends with the program and its arguments.
	cmd.Args = append(cmd.Args, rel)
	if c.Env != nil {
		// Its own run mark, not the caller's: the run's end must not end it.
		env := append(WithoutMark(c.Env), runMarkVar+"="+RunMark(cmd))
		cmd.Args = append(append(cmd.Args, "env", "-i", "--"), env...)
		if strings.Contains(c.Argv[0], "=") {
			cmd.Args = append(cmd.Args, "/bin/sh", "-c", `exec "$@"`, "sh") // env would take it for a variable
		}
	}
	cmd.Args = append(cmd.Args, c.Argv...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("background %q: %w", b.Command, err)
	}
	b.pid = cmd.Process.Pid
	go func() { _ = cmd.Wait(); close(b.exited) }()
	h.background = append(h.background, b)
	return b, nil
}

// beneath is dir relative to root ("." for "" and root itself), its links
// followed; a directory outside root is refused.
func beneath(root, dir string) (string, error) {
	if dir == "" {
		return ".", nil
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("directory %q: not an absolute path", dir)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("%s %w (%s)", dir, ErrOutsideWorkspace, root)
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s %w (%s): start it from there", dir, ErrOutsideWorkspace, root)
	}
	return rel, nil
}

// newBackgroundID is an id no background process of the home has. h.mu
// is held.
func (h *Home) newBackgroundID() string {
	for {
		var b [2]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		if !slices.ContainsFunc(h.background, func(o *Background) bool { return o.ID == id }) {
			return id
		}
	}
}

// Backgrounds are the home's background processes still running, oldest
// first.
func (h *Home) Backgrounds() []*Background {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.background = slices.DeleteFunc(h.background, func(b *Background) bool { return !b.Running() })
	return slices.Clone(h.background)
}

// StopBackground ends the background process id ("" ends them all) and
// everything it started; it reports how many it ended.
func (h *Home) StopBackground(id string) int {
	h.mu.Lock()
	var stop []*Background
	h.background = slices.DeleteFunc(h.background, func(b *Background) bool {
		if id == "" || b.ID == id {
			stop = append(stop, b)
			return true
		}
		return false
	})
	h.mu.Unlock()
	roots := make([]int, 0, len(stop))
	for _, b := range stop {
		roots = append(roots, b.pid)
	}
	h.killTree(roots)
	n := 0
	for _, b := range stop {
		select {
		case <-b.exited:
		case <-time.After(endRunWait):
		}
		n++
	}
	return n
}

// killTree kills roots and every member of the home descending from one,
// until none is left or endRunWait has passed. A process killed is waited
// for until it has exited, even once its parent's death has given it to
// another (it descends from no root then, and was still running).
func (h *Home) killTree(roots []int) {
	if len(roots) == 0 {
		return
	}
	var killed []int
	for deadline := time.Now().Add(endRunWait); ; {
		var left []int
		for _, pid := range append(h.members(), roots...) {
			// Still the home's: a pid killed and gone may be another's now.
			if (slices.Contains(killed, pid) || descendsFrom(pid, roots)) && syscall.Kill(pid, 0) == nil && !exited(pid) {
				left = append(left, pid)
			}
		}
		killed = left
		if len(left) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// backgroundPids are the first processes of the home's background
// processes. h.mu is held.
func (h *Home) backgroundPids() []int {
	var pids []int
	for _, b := range h.background {
		if b.Running() {
			pids = append(pids, b.pid)
		}
	}
	return pids
}

// descendsFrom reports whether pid is one of roots or their descendant,
// by its parents in /proc.
func descendsFrom(pid int, roots []int) bool {
	for range 64 {
		if slices.Contains(roots, pid) {
			return true
		}
		if pid = parent(pid); pid <= 1 {
			return false
		}
	}
	return false
}

// parent is pid's parent process, 0 when unknown.
func parent(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The name, in parentheses, may hold spaces: the fields after it.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// exited reports whether pid has exited and waits for its parent (a zombie).
func exited(pid int) bool {
	data, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(s[i+1:], " Z")
}

// Listening are the TCP ports something in the home's network listens
// on (its own loopback and addresses), lowest first; none when the home
// is on the host's network.
func (h *Home) Listening() []int {
	if h.net == nil {
		return nil
	}
	var ports []int
	for _, f := range []string{"tcp", "tcp6"} {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", h.pid, f))
		for i, line := range strings.Split(string(data), "\n") {
			fs := strings.Fields(line)
			if i == 0 || len(fs) < 4 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil && !slices.Contains(ports, int(p)) {
				ports = append(ports, int(p))
			}
		}
	}
	slices.Sort(ports)
	return ports
}
