package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"
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
	// A run's own sandbox shares the host's network, unless offline (a
	// namespace with a loopback alone) or net is set (the programs are
	// put in net first). A home's has a network of its own either way.
	offline bool
	net     *RunNet
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

// Clone is a copy of s, its lists copied too: the runner readies the
// copy (absolute Hide, more to hide, the programs to show), never the
// caller's sandbox.
func (s *Sandbox) Clone() Sandbox {
	c := *s
	c.Hide, c.Share = slices.Clone(s.Hide), slices.Clone(s.Share)
	c.expose, c.binds = slices.Clone(s.expose), slices.Clone(s.binds)
	return c
}

// Validate checks the sandbox: each refusal a *contract.ConfigError
// naming the setting by its path in the runner's Config (Sandbox.Limits.Pids).
func (s *Sandbox) Validate() []error {
	return s.Limits.validate(configPath + ".Limits")
}

// Probe finds bwrap and runs it once, as the agent user, the way runs use
// it: a machine without it, or one refusing user namespaces (a container
// without them), is told at start rather than at the first message.
func (s *Sandbox) Probe(u *User) error {
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
		_ = os.Chown(dir, int(u.UID), int(u.GID))
	}
	name, args := s.wrap(dir, dir, "", wrapping{}, "/bin/sh", "-c", "test -w .")
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

// wrapping is how a sandbox differs from a run's own: a home's has a
// network of its own and tells its namespaces' process (see Home).
type wrapping struct {
	// ownNet: a network namespace of its own (else the host's), whose
	// resolver is named by the file resolv, when set.
	ownNet bool
	resolv string
	// infoFD: bwrap writes its child's pid to fd 3.
	infoFD bool
	// chdir is where the program starts, when not dir: a home's holder
	// sits at /, holding no person's directory busy (nor looking like a
	// process of theirs).
	chdir string
}

// wrap returns the command line running name args inside a sandbox whose
// workspace is dir and home is home; bin, when set, is the directory of
// the agents' textslash command, shown read-only. The cgroup file system
// is hidden: no run sees another's cgroup, or their names.
func (s *Sandbox) wrap(dir, home, bin string, w wrapping, name string, args ...string) (string, []string) {
	a := []string{"--die-with-parent", "--new-session", "--unshare-all"}
	if !w.ownNet && !s.offline {
		a = append(a, "--share-net") // the host's, or the RunNet it was put in
	}
	if s.net != nil && w.resolv == "" {
		w.resolv = s.net.resolv
	}
	if w.infoFD {
		a = append(a, "--info-fd", "3")
	}
	a = append(a,
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
	)
	if fi, err := os.Stat(cgroupRoot); err == nil && fi.IsDir() {
		a = append(a, "--tmpfs", cgroupRoot)
	}
	if w.resolv != "" {
		dst := "/etc/resolv.conf"
		if real, err := filepath.EvalSymlinks(dst); err == nil {
			dst = real // bwrap binds onto a file, not through a link
		}
		a = append(a, "--ro-bind", w.resolv, dst)
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
	// A person's directories on their disk are links to it on the host
	// (runner/disk: the host's mount table names no person); bubblewrap
	// follows them, relative, from the host's root, and binds the disk's
	// directory at the person's path in this sandbox alone.
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
	cd := dir
	if w.chdir != "" {
		cd = w.chdir
	}
	a = append(a, "--chdir", cd, "--", name)
	return s.Bwrap, append(a, args...)
}

// Seen is dir, a directory the sandbox binds (a run's workspace), as its
// programs see it with links resolved (getcwd's name for it, which names
// Claude Code's sessions): under a directory the sandbox hides, which
// bubblewrap makes anew with plain directories down to each bind, the
// real path of the outermost hidden one and the rest as it is; elsewhere
// dir's real path. The two differ where dir is a link (a person's
// directory on their disk): the sandbox binds where it leads at dir.
func (s *Sandbox) Seen(dir string) string {
	top := ""
	for _, h := range append([]string{"/root", "/home", "/tmp"}, s.Hide...) {
		if rel, err := filepath.Rel(h, dir); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && (top == "" || len(h) < len(top)) {
			top = h
		}
	}
	if top == "" {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return real
		}
		return dir
	}
	real, err := filepath.EvalSymlinks(top)
	if err != nil {
		real = top
	}
	rel, _ := filepath.Rel(top, dir)
	return filepath.Join(real, rel)
}

// Ready readies the sandbox at start for runs as u (nil: textslash's own
// user) in the workspaces directory, whose agent may be the Claude Code
// binary claudeBin: bwrap works, and limits can be set — or says why not
// (unlimited: why runs are not limited one by one; nil when they are).
// Hide is made absolute and the workspaces added to it, and the programs
// under a hidden directory are shown.
func (s *Sandbox) Ready(u *User, workspaces, claudeBin string, log zerolog.Logger) (unlimited, err error) {
	for i, h := range s.Hide {
		if abs, err := filepath.Abs(h); err == nil {
			s.Hide[i] = abs
		}
	}
	// Every workspace but the run's own: a project's workspace lies deeper
	// than the person's default one, so hiding its parent is not enough.
	s.Hide = append(s.Hide, workspaces)
	s.expose = programDirs(append([]string{"/root", "/home", os.TempDir(), workspaces}, s.Hide...), claudeBin, u)
	if len(s.expose) > 0 {
		log.Info().Strs("dirs", s.expose).Msg("sandbox shows these program directories read-only (they are under a hidden directory)")
	}
	if err := s.Probe(u); err != nil {
		return nil, err
	}
	var why error // runs are not limited
	limited := false
	if s.Limits.zero() {
		unlimited = errors.New("no limits are set")
	} else if why = cgroupsWritable(); why == nil {
		limited = true
		sweepCgroups(log)
	} else {
		unlimited = why
	}
	ev, msg := log.Info(), "runs sandboxed (bubblewrap)"
	if why != nil {
		ev, msg = log.Error().Err(why), "runs sandboxed (bubblewrap) but NOT limited one by one (memory, processes, CPU): they run without cgroups of their own, since textslash cannot make cgroups here; run it as root, or give it textslash's cgroups (chown -R to its user)"
	}
	ev.Bool("limited", limited).Int64("memory", s.Limits.Memory).Int("pids", s.Limits.Pids).
		Float64("cpu", s.Limits.CPU).Msg(msg)
	return unlimited, nil
}

// programDirs are the directories of programs runs need that lie under a
// hidden directory and that u (the runs' user; nil: textslash's) may reach:
// PATH's entries, and the package of the Claude Code binary claudeBin (its
// node_modules), wherever links lead.
func programDirs(hidden []string, claudeBin string, u *User) []string {
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
func canReach(dir string, u *User) bool {
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
