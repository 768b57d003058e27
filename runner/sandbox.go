package runner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Sandbox confines every program of a run with bubblewrap, as the agent
// user: the run sees the system read-only, its own workspace and home
// read-write, a private /tmp, and nothing of textslash — no other
// person's workspace or home, no data directory (JetStream's files, NATS
// logins, keys), no other run's processes (its own pid namespace, /proc
// fresh). Whatever the run starts, setsid or not, dies with it: when the
// sandbox's first process ends, the kernel ends its pid namespace.
//
// Why bubblewrap rather than a uid per person alone: a uid keeps files
// apart only as far as every file's mode does (a workspace made 0755 by a
// tool is readable by all), and leaves /proc, the data directory's
// world-readable files and textslash's binaries in view. Namespaces hide
// them whatever their modes. bwrap runs unprivileged (a user namespace
// maps the agent user to itself, so files written belong to it outside
// too), the same whether textslash runs as root or not.
type Sandbox struct {
	// Bwrap is bubblewrap's binary; empty looks up bwrap in PATH.
	Bwrap string
	// Hide are host directories no run may see (textslash's data
	// directory; the people's credentials are added at start); the
	// workspaces directory (all but the run's own workspace and home),
	// /root, /home and /tmp are always hidden.
	Hide []string
	// Share are host directories bound read-write into every run: a cache
	// or a directory the operator chooses to share.
	Share []string
	// expose are directories of hidden places shown read-only again: the
	// agent's programs where they are installed under a home or /tmp (a
	// Claude Code from nvm in ~/.nvm); set at start.
	expose []string
	// Limits of each run; zero values: no limit.
	Limits Limits
	// binds are host directories one run alone sees, read-only, on top of
	// everything else: its person's credentials (see withBind).
	binds [][2]string
}

// withBind is s for one run that also sees host directory src read-only
// at dst (bwrap makes dst, under a directory it may write: the run's
// /tmp, not the read-only system). s itself, shared by every run, is left
// as it was.
func (s *Sandbox) withBind(src, dst string) *Sandbox {
	c := *s
	c.binds = append(slices.Clip(s.binds), [2]string{src, dst})
	return &c
}

// withDefaults is a copy of s, its lists copied too: New readies the
// copy (absolute Hide, more to hide, the programs to show), never the
// caller's sandbox.
func (s *Sandbox) withDefaults() Sandbox {
	c := *s
	c.Hide, c.Share = slices.Clone(s.Hide), slices.Clone(s.Share)
	c.expose, c.binds = slices.Clone(s.expose), slices.Clone(s.binds)
	return c
}

// validate checks the sandbox, named path in the Config.
func (s *Sandbox) validate(path string) []error {
	return s.Limits.validate(path + ".Limits")
}

// ErrNoSandbox means runs cannot be sandboxed here.
var ErrNoSandbox = errors.New("cannot sandbox runs")

// probe finds bwrap and runs it once, as the agent user, the way runs use
// it: a machine without it, or one refusing user namespaces (a container
// without them), is told at start rather than at the first message.
func (s *Sandbox) probe(u *agentUser) error {
	bin := s.Bwrap
	if bin == "" {
		bin = "bwrap"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return fmt.Errorf("%w: bubblewrap not found (apt install bubblewrap), or run agents unconfined (no sandbox)", ErrNoSandbox)
	}
	s.Bwrap = path
	dir, err := os.MkdirTemp("", "textslash-probe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if u != nil {
		_ = os.Chown(dir, int(u.uid), int(u.gid))
	}
	name, args := s.wrap(dir, dir, "", "/bin/sh", "-c", "test -w .")
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if u != nil {
		cmd.SysProcAttr = credential(u)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: bwrap failed: %v: %s (user namespaces must be allowed: sysctl kernel.unprivileged_userns_clone=1; in a container, seccomp and AppArmor must let it unshare), or run agents unconfined (no sandbox)", ErrNoSandbox, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// wrap returns the command line running name args inside a sandbox whose
// workspace is dir and home is home; bin, when set, is the directory of
// the agents' textslash command, shown read-only.
func (s *Sandbox) wrap(dir, home, bin, name string, args ...string) (string, []string) {
	a := []string{
		"--die-with-parent", "--new-session",
		"--unshare-all", "--share-net",
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
	}
	// Homes first, then the programs installed in them shown again, then
	// textslash's own directories hidden whatever the programs' places.
	tmpfs := func(dirs ...string) {
		slices.Sort(dirs) // a parent before its children
		for _, h := range slices.Compact(dirs) {
			if fi, err := os.Stat(h); err == nil && fi.IsDir() {
				a = append(a, "--tmpfs", h)
			}
		}
	}
	tmpfs("/root", "/home")
	for _, e := range s.expose {
		a = append(a, "--ro-bind", e, e)
	}
	tmpfs(append([]string{filepath.Dir(dir), filepath.Dir(home)}, s.Hide...)...)
	a = append(a, "--bind", dir, dir, "--bind", home, home)
	if bin != "" {
		a = append(a, "--ro-bind", bin, bin)
	}
	for _, sh := range s.Share {
		a = append(a, "--bind", sh, sh)
	}
	for _, b := range s.binds {
		a = append(a, "--ro-bind", b[0], b[1])
	}
	a = append(a, "--chdir", dir, "--", name)
	return s.Bwrap, append(a, args...)
}

// confine readies the runner's sandbox at start: bwrap works, runs have an
// unprivileged identity (nobody, when textslash runs as root without an
// AgentUser), and limits can be set — or says why not.
func (r *Runner) confine() error {
	box := r.cfg.Sandbox
	if os.Geteuid() == 0 && r.user == nil {
		nobody, err := lookupAgentUser("nobody")
		if err != nil {
			return fmt.Errorf("%w: as root without an AgentUser runs drop to nobody, which this system lacks: %v", ErrNoSandbox, err)
		}
		r.user = nobody
		r.log.Warn().Msg("runs sandboxed as nobody: set TEXTSLASH_AGENT_USER to give agents a user of their own")
	}
	for i, h := range box.Hide {
		if abs, err := filepath.Abs(h); err == nil {
			box.Hide[i] = abs
		}
	}
	// Every workspace but the run's own: a project's workspace lies deeper
	// than the person's default one, so hiding its parent is not enough.
	box.Hide = append(box.Hide, r.cfg.Workspaces)
	box.expose = programDirs(append([]string{"/root", "/home", os.TempDir(), r.cfg.Workspaces}, box.Hide...), r.cfg.ClaudeBin, r.user)
	if len(box.expose) > 0 {
		r.log.Info().Strs("dirs", box.expose).Msg("sandbox shows these program directories read-only (they are under a hidden directory)")
	}
	if err := box.probe(r.user); err != nil {
		return err
	}
	if !box.Limits.zero() {
		if err := cgroupsWritable(); err != nil {
			r.log.Error().Err(err).Msg("runs are NOT limited (memory, processes, CPU): textslash cannot make cgroups here; run it as root or in a cgroup it may write")
		} else {
			r.limited = true
		}
	}
	r.log.Info().Bool("limited", r.limited).Int64("memory", box.Limits.Memory).Int("pids", box.Limits.Pids).
		Float64("cpu", box.Limits.CPU).Msg("runs sandboxed (bubblewrap)")
	return nil
}

// programDirs are the directories of programs runs need that lie under a
// hidden directory and that u (the runs' user; nil: textslash's) may reach:
// PATH's entries, and the package of the Claude Code binary claudeBin (its
// node_modules), wherever links lead.
func programDirs(hidden []string, claudeBin string, u *agentUser) []string {
	under := func(p string) bool {
		for _, h := range hidden {
			if rel, err := filepath.Rel(h, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return true
			}
		}
		return false
	}
	var dirs []string
	add := func(d string) {
		if real, err := filepath.EvalSymlinks(d); err == nil && under(real) && canReach(real, u) && !slices.Contains(dirs, real) {
			dirs = append(dirs, real)
		}
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(d) {
			add(d)
		}
	}
	if claudeBin == "" {
		claudeBin, _ = exec.LookPath("claude")
	}
	if real, err := filepath.EvalSymlinks(claudeBin); err == nil && claudeBin != "" {
		for d := filepath.Dir(real); d != filepath.Dir(d); d = filepath.Dir(d) {
			if filepath.Base(d) == "node_modules" {
				add(d)
				break
			}
		}
	}
	return dirs
}

// canReach reports whether u may pass every directory down to dir (its
// own user's, when u is nil, may).
func canReach(dir string, u *agentUser) bool {
	if u == nil {
		return true
	}
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || !passable(fi, u) {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}
