package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// killGrace is how long a process group has between SIGTERM and SIGKILL.
const killGrace = 500 * time.Millisecond

// User is the OS identity agents run as; nil runs them as textslash.
type User struct {
	Name     string
	UID, GID uint32
}

// LookupUser resolves the runner's Config.AgentUser. Running as root
// without one is allowed for the shell agent only (Claude Code refuses
// root).
func LookupUser(name string) (*User, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("agent user %q: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("agent user %q uid %q: %w", name, u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("agent user %q gid %q: %w", name, u.Gid, err)
	}
	return &User{Name: name, UID: uint32(uid), GID: uint32(gid)}, nil
}

// passEnv lists the variables of textslash's own environment every agent
// inherits, by exact name or by prefix (ending in _). Everything else —
// Twilio tokens, NATS credentials, signing keys — stays out.
var passEnv = []string{
	"PATH", "LANG", "LC_ALL", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
}

// modelEnv is what agents that call a model inherit too, their keys and
// settings: Claude Code's, and those of the agents spoken to over the
// Agent Client Protocol (Gemini CLI, Codex, opencode, whose providers'
// keys are these too). The shell agent has no use for the operator's keys.
var modelEnv = []string{"ANTHROPIC_", "CLAUDE_CODE_", "DISABLE_", "GEMINI_", "GOOGLE_", "OPENAI_", "CODEX_", "OPENCODE_"}

// Env is the environment of an agent's programs.
func Env(home string, u *User, model bool) []string {
	pass := passEnv
	if model {
		pass = append(slices.Clone(passEnv), modelEnv...)
	}
	env := []string{"HOME=" + home, "SHELL=/bin/bash", "TERM=dumb", "CI=true"}
	if u != nil {
		env = append(env, "USER="+u.Name, "LOGNAME="+u.Name)
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range pass {
			if name == p || (strings.HasSuffix(p, "_") && strings.HasPrefix(name, p)) {
				env = append(env, kv)
				break
			}
		}
	}
	return env
}

// CommandFunc returns the runner's Run.Command for one workspace; model
// says whether the agent gets the model variables (modelEnv); extra
// variables come last and win over the same names before them.
func CommandFunc(dir, home string, u *User, model bool, extra ...string) func(ctx context.Context, name string, args ...string) *exec.Cmd {
	// PWD as Go sets it when it makes the environment: a shell's pwd names
	// dir, not where its links lead (a person's directory on their disk
	// is a link to it, where the run is not sandboxed).
	env := append(append(Env(home, u, model), "PWD="+dir), extra...)
	return func(ctx context.Context, name string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		// A mark every process of this program inherits, so EndGroup finds
		// the ones that left its process group (Claude Code starts its
		// tools in sessions of their own).
		cmd.Env = append(slices.Clip(env), runMarkVar+"="+NewMark())
		cmd.SysProcAttr = credential(u)
		// Cancel ends the whole group: the agent and everything it started.
		cmd.Cancel = func() error {
			if cmd.Process == nil {
				return nil
			}
			pgid := cmd.Process.Pid
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			go func() {
				time.Sleep(killGrace)
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}()
			return nil
		}
		cmd.WaitDelay = 2 * killGrace
		return cmd
	}
}

// credential starts a process as u (textslash's own user when nil) in a
// process group of its own.
func credential(u *User) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true}
	if u != nil {
		a.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID}
	}
	return a
}

// Confined wraps a run's command function so that every program runs in
// the run's sandbox, in its cgroup when cg is not nil, in the sandbox's
// network (the host's, none, or a RunNet: see InNet, Offline); bin is the
// directory of the agents' textslash command.
func Confined(next func(ctx context.Context, name string, args ...string) *exec.Cmd, s *Sandbox, dir, home, bin string, cg *Cgroup) func(ctx context.Context, name string, args ...string) *exec.Cmd {
	return func(ctx context.Context, name string, args ...string) *exec.Cmd {
		cmd := next(ctx, name, args...)
		if cmd.Err != nil {
			return cmd // not found: nothing to run
		}
		path, argv := s.wrap(dir, home, bin, wrapping{}, cmd.Path, args...)
		if s.net != nil {
			path, argv = s.net.enter(cmd, path, argv)
		}
		if cg != nil {
			if cg.v2 {
				if fd, err := cg.fd(); err == nil {
					cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
				}
			} else {
				path, argv = cg.joinArgs(path, argv)
			}
		}
		cmd.Path, cmd.Args = path, append([]string{path}, argv...)
		return cmd
	}
}

// PrepareWorkspace makes the user's workspace and home and gives them to
// the agent user. Their parents are made traversable so that user can
// reach them, whatever the umask or an earlier mode.
func PrepareWorkspace(dir, home string, u *User) error {
	for _, d := range []string{dir, home} {
		if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if u != nil {
			if err := os.Chmod(filepath.Dir(d), 0o755); err != nil {
				return fmt.Errorf("workspace: %w", err)
			}
		}
		if err := os.Mkdir(d, 0o750); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("workspace: %w", err)
		}
		if u != nil {
			if err := os.Chown(d, int(u.UID), int(u.GID)); err != nil {
				return fmt.Errorf("workspace owner: %w", err)
			}
		}
	}
	return nil
}

// EndGroup ends whatever a finished program left running: its process
// group, and every process carrying its run mark wherever it went (another
// process group or session), so nothing an agent starts outlives its run
// or escapes the timeout and the concurrency limit.
func EndGroup(cmd *exec.Cmd) {
	defer confinedIn.Delete(cmd)
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	endMarked(cmd, nil)
}

// confinedIn is the home each program Confined to one runs in, until
// EndGroup: what it left is among the home's processes, looked for there
// alone (a few, where /proc lists every process on the machine), and
// runs as the agent user, which nsenter became inside.
var confinedIn sync.Map // *exec.Cmd → *Home

// EndMarked ends every process carrying cmd's run mark but cmd's own
// process and those in keep (and the process groups they lead): what a
// program kept running between runs (a warm agent) started during one,
// wherever it went, while the program itself and the processes it runs
// in (keep: bubblewrap's, the agent's) go on.
func EndMarked(cmd *exec.Cmd, keep ...int) {
	if cmd.Process == nil {
		return
	}
	endMarked(cmd, append([]int{cmd.Process.Pid}, keep...))
}

// endMarked kills the processes carrying cmd's run mark, and the groups
// they lead, but those in keep.
func endMarked(cmd *exec.Cmd, keep []int) {
	mark := RunMark(cmd)
	if mark == "" {
		return
	}
	// Again after a scan that found some: one may have forked between the
	// scan and the kill. The usual run, which left nothing behind, pays
	// for one scan.
	for range 3 {
		killed := 0
		var marked []int
		if h, ok := confinedIn.Load(cmd); ok {
			marked = h.(*Home).marked(runMarkVar + "=" + mark)
		} else {
			marked = markedProcesses(runMarkVar+"="+mark, owner(cmd), cmd.Process.Pid)
		}
		for _, pid := range marked {
			if slices.Contains(keep, pid) {
				continue
			}
			_ = syscall.Kill(-pid, syscall.SIGKILL) // its group, if it leads one
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed++
		}
		if killed == 0 {
			return
		}
	}
}

// RunMark is the run mark cmd's processes carry ("" for none): the value
// of TEXTSLASH_RUN in its environment.
func RunMark(cmd *exec.Cmd) string {
	var mark string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, runMarkVar+"="); ok {
			mark = v
		}
	}
	return mark
}

// WithoutMark is env without its run mark: what two programs' environments
// are compared by, since each program gets a mark of its own.
func WithoutMark(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, runMarkVar+"=") })
}

// runMarkVar names the environment variable carrying a program's run mark.
const runMarkVar = "TEXTSLASH_RUN"

func NewMark() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// owner is the user id cmd runs as.
func owner(cmd *exec.Cmd) uint32 {
	if a := cmd.SysProcAttr; a != nil && a.Credential != nil {
		return a.Credential.Uid
	}
	return uint32(os.Geteuid())
}

// markedProcesses lists the processes (not threads) of user uid whose environment holds
// mark ("NAME=value"), read from /proc (readable for the agent user's
// processes when textslash runs as root or as that user). Only processes
// started since first (the program the mark was given to) can carry it:
// Linux hands out process ids in rising order, wrapping at pid_max, and
// /proc/loadavg names the last one, so older processes and other users'
// are passed over unread. Reading environments is what a scan spends its
// time on, and a busy runner scans after every program it ran.
func markedProcesses(mark string, uid uint32, first int) []int {
	last := lastPID()
	since := func(pid int) bool {
		switch {
		case last == 0: // unknown: every process
			return true
		case last >= first:
			return pid >= first && pid <= last
		default: // the ids wrapped around since first
			return pid >= first || pid <= last
		}
	}
	var names []string
	if last >= first && last-first < 128 {
		// Few ids were handed out since: look them up rather than list
		// /proc, which costs more.
		for pid := first; pid <= last; pid++ {
			names = append(names, strconv.Itoa(pid))
		}
	} else {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return nil
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
	}
	var pids []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == os.Getpid() || !since(pid) {
			continue
		}
		if fi, err := os.Stat("/proc/" + name); err != nil {
			continue
		} else if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uid {
			continue
		}
		if carries(name, mark) && leader(name) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// carries reports whether the environment of /proc/<pid> holds mark.
func carries(pid, mark string) bool {
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		return false
	}
	want := []byte(mark)
	return slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool { return bytes.Equal(kv, want) })
}

// leader reports whether /proc/<pid> is a process and not one of its
// threads, which /proc answers for too (unlisted): pid is its thread
// group's id.
func leader(pid string) bool {
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return false
	}
	_, rest, ok := bytes.Cut(status, []byte("\nTgid:"))
	tgid, _, _ := bytes.Cut(rest, []byte("\n"))
	return ok && string(bytes.TrimSpace(tgid)) == pid
}

// ExitCode is a finished program's exit code: 128+signal when a signal
// ended it, -1 when it never ran.
func ExitCode(cmd *exec.Cmd) int {
	ps := cmd.ProcessState
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lastPID is the id of the process created last on this machine (in this
// process id namespace), or 0 when /proc does not say.
func lastPID() int {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	// "0.20 0.18 0.12 1/80 11206": the fifth field.
	f := strings.Fields(string(data))
	if len(f) < 5 {
		return 0
	}
	pid, _ := strconv.Atoi(f[4])
	return pid
}

// Reachable lets u traverse every directory from dir up to /: one of
// textslash's own without o+x (a data directory made 0700) gets it —
// traverse only, not list; one of another owner's that u cannot traverse
// is an error, said at start rather than as "permission denied" at every
// run.
func Reachable(dir string, u *User) (changed []string, err error) {
	if u == nil {
		return nil, nil
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return changed, err
		}
		if !passable(fi, u) {
			if fi.Sys().(*syscall.Stat_t).Uid != uint32(os.Geteuid()) {
				return changed, fmt.Errorf("agent user %s cannot reach %s: %s (mode %v, not textslash's) lets others not pass", u.Name, dir, d, fi.Mode().Perm())
			}
			if err := os.Chmod(d, fi.Mode()|0o001); err != nil {
				return changed, err
			}
			changed = append(changed, d)
		}
		if d == filepath.Dir(d) {
			return changed, nil
		}
	}
}

// passable reports whether u may pass directory fi (its x bit for u).
func passable(fi os.FileInfo, u *User) bool {
	st := fi.Sys().(*syscall.Stat_t)
	mode := fi.Mode().Perm()
	return mode&0o001 != 0 || (st.Uid == u.UID && mode&0o100 != 0) || (st.Gid == u.GID && mode&0o010 != 0)
}
