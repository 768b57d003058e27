package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// homeBox is a sandbox for home tests, or the test is skipped where homes
// cannot be kept.
func homeBox(t *testing.T) *Sandbox {
	t.Helper()
	if err := ProbeHomes(); err != nil {
		t.Skip(err)
	}
	box := &Sandbox{}
	if err := box.Probe(nil); err != nil {
		t.Skip(err)
	}
	return box
}

// outputOf runs name args through command and returns its output.
func outputOf(t *testing.T, command func(ctx context.Context, name string, args ...string) *exec.Cmd, script string) string {
	t.Helper()
	cmd := command(t.Context(), "/bin/sh", "-c", script)
	out, err := cmd.CombinedOutput()
	EndGroup(cmd)
	if err != nil {
		t.Fatalf("%s: %v: %s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A home is made once and kept: the second run of the same sandbox is in
// the same namespaces (its processes see the first's files in /tmp), and
// what a run left running — setsid and double-forked — ends with it,
// while the home stays.
func TestHomeKeptAndRunsEnd(t *testing.T) {
	eachLimit(t, homeBox(t), func(t *testing.T, box *Sandbox, hs *Homes) { homeKeptAndRunsEnd(t, box, hs) })
}

// eachLimit runs f in a subtest for homes without a cgroup and, where
// cgroups are writable, with one (box with a pids limit).
func eachLimit(t *testing.T, box *Sandbox, f func(t *testing.T, box *Sandbox, hs *Homes)) {
	for _, limited := range []bool{false, true} {
		t.Run(map[bool]string{false: "no cgroup", true: "cgroup"}[limited], func(t *testing.T) {
			if limited && cgroupsWritable() != nil {
				t.Skip("needs writable cgroups")
			}
			b := *box
			if limited {
				b.Limits = Limits{Pids: 256}
			}
			f(t, &b, &Homes{Limited: limited})
		})
	}
}

// homeKeptAndRunsEnd is TestHomeKeptAndRunsEnd with hs's homes of box.
func homeKeptAndRunsEnd(t *testing.T, box *Sandbox, hs *Homes) {
	ws, home := t.TempDir(), t.TempDir()
	defer hs.Close()
	log := zerolog.Nop()

	h, leave, err := hs.Enter(box, ws, home, "", nil, log)
	if err != nil {
		t.Fatal(err)
	}
	command := h.Confined(CommandFunc(ws, home, nil, false))
	first := outputOf(t, command, `echo kept > /tmp/mark; readlink /proc/self/ns/pid; (env -u TEXTSLASH_RUN setsid sh -c 'sleep 300.4242 >/dev/null 2>&1 &' &); sleep 0.2`)
	escaped := findProc("sleep\x00300.4242")
	if escaped == 0 {
		t.Fatal("the run's double-forked sleep is not running")
	}
	leave()
	if !h.Alive() {
		t.Fatal("the home ended with its run")
	}
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if running(escaped) {
			return errString("the double-forked sleep outlived its run")
		}
		return nil
	})

	h2, leave2, err := hs.Enter(box, ws, home, "", nil, log)
	if err != nil {
		t.Fatal(err)
	}
	defer leave2()
	if h2 != h {
		t.Fatal("the second run of the same sandbox got another home")
	}
	second := outputOf(t, h2.Confined(CommandFunc(ws, home, nil, false)), `cat /tmp/mark; readlink /proc/self/ns/pid; /bin/pwd`)
	// /bin/pwd asks the kernel (getcwd): a directory entered outside the
	// home's mount namespace would be unreachable from its root.
	if want := "kept\n" + first + "\n" + ws; second != want {
		t.Errorf("second run saw %q; want %q (the same /tmp and pid namespace)", second, want)
	}
	if st := hs.Stats(); st.Starts != 1 || st.Reuse != 1 || st.Warm != 1 {
		t.Errorf("stats %+v; want 1 start, 1 reuse, 1 warm", st)
	}
}

// A run sees no cgroups: neither its own nor another's, whose names could
// tell who else runs here (a person's phone number in a run's cgroup name
// was listed by ls /sys/fs/cgroup/pids/textslash/). Both in a sandbox of
// its own and in a home.
func TestRunSeesNoCgroups(t *testing.T) {
	box := homeBox(t)
	if cgroupsWritable() != nil {
		t.Skip("needs writable cgroups")
	}
	other, err := NewCgroup("whatsapp.15551000004-"+NewMark(), Limits{Pids: 64}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Kill()
	ws, home := t.TempDir(), t.TempDir()
	const look = `ls -AR /sys/fs/cgroup 2>&1 | grep -c 15551000004 || true; cat /proc/self/cgroup`
	own := outputOf(t, Confined(CommandFunc(ws, home, nil, false), box, ws, home, "", nil), look)
	hs := &Homes{Limited: true}
	defer hs.Close()
	limited := *box
	limited.Limits = Limits{Pids: 128}
	h, leave, err := hs.Enter(&limited, ws, home, "", nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	inHome := outputOf(t, h.Confined(CommandFunc(ws, home, nil, false)), look)
	for name, out := range map[string]string{"own sandbox": own, "home": inHome} {
		if first, _, _ := strings.Cut(out, "\n"); first != "0" {
			t.Errorf("%s: a run listed another's cgroup by name (%s matches)", name, first)
		}
		if strings.Contains(out, "15551000004") {
			t.Errorf("%s: a run saw a person's number: %s", name, out)
		}
	}
	if !strings.Contains(inHome, h.ID()) {
		t.Errorf("home's run is not in the home's cgroup %s: %s", h.ID(), inHome)
	}
}

// A home is made inside its cgroup: bubblewrap and the holder are its
// members from their start, so that making homes shares the homes' CPU
// group and does not compete with textslash's own work (started outside
// it, acknowledgements under a crowd of newcomers went from 4 to 150 ms).
func TestHomeMadeInItsCgroup(t *testing.T) {
	box := homeBox(t)
	if cgroupsWritable() != nil {
		t.Skip("needs writable cgroups")
	}
	hs := &Homes{Limited: true}
	defer hs.Close()
	limited := *box
	limited.Limits = Limits{Pids: 128, CPU: 1}
	h, leave, err := hs.Enter(&limited, t.TempDir(), t.TempDir(), "", nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	for _, dir := range h.cg.dirs() {
		data, err := os.ReadFile(dir + "/cgroup.procs")
		if err != nil {
			t.Fatal(err)
		}
		members := strings.Fields(string(data))
		for _, pid := range h.own {
			if !slices.Contains(members, strconv.Itoa(pid)) {
				t.Errorf("the home's own process %d is not in its cgroup %s (members %v)", pid, dir, members)
			}
		}
	}
}

// Homes past Max are let go, the least recently used first, and an idle
// home goes after Idle; a home with a run in it stays.
func TestHomesLetGo(t *testing.T) {
	box := homeBox(t)
	hs := &Homes{Max: 1, Idle: time.Hour}
	defer hs.Close()
	log := zerolog.Nop()
	ws1, ws2, home := t.TempDir(), t.TempDir(), t.TempDir()
	h1, leave1, err := hs.Enter(box, ws1, home, "", nil, log)
	if err != nil {
		t.Fatal(err)
	}
	h2, leave2, err := hs.Enter(box, ws2, home, "", nil, log)
	if err != nil {
		t.Fatal(err)
	}
	if !h1.Alive() {
		t.Fatal("a home with a run in it was let go")
	}
	leave1()
	h3, leave3, err := hs.Enter(box, t.TempDir(), home, "", nil, log)
	if err != nil {
		t.Fatal(err)
	}
	leave3()
	natstest.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if h1.Alive() {
			return errString("the least recently used idle home was kept past Max")
		}
		return nil
	})
	if !h2.Alive() {
		t.Error("the home in use was let go")
	}
	leave2()
	hs.Idle = time.Nanosecond
	hs.Sweep(log)
	if h2.Alive() || h3.Alive() {
		t.Error("idle homes were kept past Idle")
	}
	if st := hs.Stats(); st.Warm != 0 {
		t.Errorf("%d homes kept after the sweep", st.Warm)
	}
}

// findProc is the pid of a process whose command line (arguments joined
// by NUL) contains cmdline, or 0.
func findProc(cmdline string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if data, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); strings.Contains(string(data), cmdline) {
			return pid
		}
	}
	return 0
}

// running reports whether a process of pid runs (and is no zombie).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return !strings.Contains(string(stat), ") Z ")
}

type errString string

func (e errString) Error() string { return string(e) }

// A home has a network of its own: a server on the host's loopback (the
// web chat, NATS, another person's dev server) is out of reach, but for
// the addresses forwarded; a server the run starts on its own loopback is
// not the host's.
func TestHomeOwnNetwork(t *testing.T) {
	box := homeBox(t)
	if err := netns.Probe(netns.Options{}); err != nil {
		t.Skip(err)
	}
	private, forwarded := serveHost(t, "127.0.0.1:0"), serveHost(t, "127.0.0.1:0")
	hs := &Homes{Network: &netns.Options{Forward: []string{forwarded}, RefuseHost: true}, Dir: t.TempDir()}
	defer hs.Close()
	ws, home := t.TempDir(), t.TempDir()
	h, leave, err := hs.Enter(box, ws, home, "", nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer leave()
	tcp := func(addr string) string {
		host, port, _ := net.SplitHostPort(addr)
		return fmt.Sprintf("(timeout 2 cat < /dev/tcp/%s/%s) 2>/dev/null || echo refused", host, port)
	}
	got := outputOf(t, h.Confined(CommandFunc(ws, home, nil, false)), "bash -c '"+tcp(private)+"; "+tcp(forwarded)+"'")
	if want := "refused\nhost"; got != want {
		t.Errorf("from the home, the host's private and forwarded servers: %q; want %q", got, want)
	}
	if h.Net() == nil {
		t.Error("the home has no network of its own")
	}
}

// What a program of a run leaves behind in another session, its mark
// kept, ends with the program (EndGroup), not only with the run: also
// in a home whose programs run as the agent user, which nsenter becomes
// inside (the command as started is root's).
func TestEndGroupInHome(t *testing.T) {
	box := homeBox(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the agent user is another")
	}
	u, err := LookupUser("nobody")
	if err != nil {
		t.Fatal(err)
	}
	eachLimit(t, box, func(t *testing.T, b *Sandbox, hs *Homes) {
		defer hs.Close()
		ws, home := t.TempDir(), t.TempDir()
		for _, d := range []string{ws, home} {
			if err := os.Chown(d, int(u.UID), int(u.GID)); err != nil {
				t.Fatal(err)
			}
			if _, err := Reachable(d, u); err != nil {
				t.Fatal(err)
			}
		}
		h, leave, err := hs.Enter(b, ws, home, "", u, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		defer leave()
		cmd := h.Confined(CommandFunc(ws, home, u, false))(t.Context(), "/bin/sh", "-c", `(setsid sh -c 'sleep 300.4343 >/dev/null 2>&1 &' &); sleep 0.2`)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		left := findProc("sleep\x00300.4343")
		EndGroup(cmd)
		if left == 0 {
			t.Fatal("the program's setsid sleep is not running")
		}
		natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
			if running(left) {
				return errString("the setsid sleep outlived its program, its run still on")
			}
			return nil
		})
	})
}
