package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/sandbox"
)

// testDiskQuota is small, for the tests to fill it fast.
const testDiskQuota = 64 << 20

// needDisks skips where people's disks cannot be bounded: not root, or
// no loop devices.
func needDisks(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("disks need root (loop devices and mounts)")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("disks need /dev/loop-control: %v", err)
	}
}

// A run writing past the person's quota (the 2 GB dd of issue 34, here
// 100 MB into 64 MB) fails with ENOSPC inside the run, and the person
// reads that their workspace is full; another person's runs and the
// host's disk go on; the person deletes and writes again; and a runner
// started again finds the files.
func TestDiskQuotaBoundsAPerson(t *testing.T) {
	needDisks(t)
	e := newRunnerEnv(t)
	cfg := Config{Timeout: time.Minute, Sandbox: &sandbox.Sandbox{}, DiskQuota: testDiskQuota}
	stop := e.start(cfg)
	a, b := e.user(contract.ChannelWeb, "diskA"), e.user(contract.ChannelWeb, "diskB")

	e.job(a, "fill", "dd if=/dev/zero of=big bs=1M count=100")
	ev := e.waitDone(a, "fill", runnerWait)
	full := fmt.Sprintf(MsgDiskFull, "64 MB", "64 MB")
	if !strings.Contains(ev.Text, "No space left on device") || !strings.HasPrefix(ev.Text, full) {
		t.Errorf("dd of 100 MB into a 64 MB quota: got %q; want %q first, then dd's No space left on device", ev.Text, full)
	}
	if fi, err := os.Stat(filepath.Join(e.workspaces, a.Key(), "big")); err != nil || fi.Size() >= testDiskQuota {
		t.Errorf("the file written: got %v, %v; want there, under 64 MB", fi, err)
	}

	e.job(b, "other", "dd if=/dev/zero of=ten bs=1M count=10 2>/dev/null && echo wrote")
	if ev := e.waitDone(b, "other", runnerWait); ev.Text != "wrote" {
		t.Errorf("another person's 10 MB while the first one's disk is full: got %q; want wrote", ev.Text)
	}

	e.job(a, "again", "rm big && dd if=/dev/zero of=twenty bs=1M count=20 2>/dev/null && echo wrote again")
	if ev := e.waitDone(a, "again", runnerWait); ev.Text != "wrote again" {
		t.Errorf("after deleting: got %q; want wrote again", ev.Text)
	}

	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	e.start(cfg)
	e.job(a, "after", "wc -c < twenty")
	if ev := e.waitDone(a, "after", runnerWait); ev.Text != "20971520" {
		t.Errorf("after a restart: got %q; want 20971520 (the file of 20 MiB)", ev.Text)
	}
}

// An agent that fails as it fills the disk: the person reads that their
// workspace is full, not that something went wrong.
func TestDiskQuotaFullInPlaceOfFailure(t *testing.T) {
	needDisks(t)
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute, Sandbox: &sandbox.Sandbox{}, DiskQuota: testDiskQuota,
		Agent: "dd if=/dev/zero of=big bs=1M count=100"})
	u := e.user(contract.ChannelWeb, "diskFail")
	e.job(u, "fill", "make a big file")
	ev := e.waitDone(u, "fill", runnerWait)
	if want := fmt.Sprintf(MsgDiskFull, "64 MB", "64 MB"); ev.Status != contract.StatusError || ev.Text != want {
		t.Errorf("done: got %q %q; want %q %q", ev.Status, ev.Text, contract.StatusError, want)
	}
}

// A person taken over by a runner whose disks are bounded gets their
// default workspace back from its snapshot: their new disk's empty
// workspace is not taken for theirs.
func TestDiskQuotaRestoresFromSnapshot(t *testing.T) {
	needDisks(t)
	e := newRunnerEnv(t)
	cfg := Config{Timeout: time.Minute, Sandbox: &sandbox.Sandbox{}, DiskQuota: testDiskQuota, Snapshots: true}
	stop := e.start(cfg)
	u := e.user(contract.ChannelWeb, "diskFollow")
	e.job(u, "write", "echo kept > note && echo ok")
	if ev := e.waitDone(u, "write", runnerWait); ev.Text != "ok" {
		t.Fatalf("write: got %q; want ok", ev.Text)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Another machine: workspaces of its own.
	e.workspaces = t.TempDir()
	e.start(cfg)
	e.job(u, "read", "cat note")
	if ev := e.waitDone(u, "read", runnerWait); ev.Text != "kept" {
		t.Errorf("on a runner that had not held the person: got %q; want kept (restored from the snapshot)", ev.Text)
	}
}

// Where disks cannot be made, the runner starts anyway and says loudly
// that they are not bounded.
func TestDiskQuotaUnsupportedSaid(t *testing.T) {
	e := newRunnerEnv(t)
	t.Setenv("PATH", t.TempDir()) // no mkfs.ext4
	var logs strings.Builder
	r, err := New(Config{Agent: AgentShell, Workspaces: e.workspaces, DiskQuota: testDiskQuota}, e.js, zerolog.New(&logs))
	if err != nil {
		t.Fatalf("New: %v; want a runner without bounds", err)
	}
	if r.disks != nil || !strings.Contains(logs.String(), `"level":"error"`) || !strings.Contains(logs.String(), "disks are NOT bounded") {
		t.Errorf("disks %v, logs %s; want none, and an error line saying disks are NOT bounded", r.disks, logs.String())
	}
}

// A person with a disk who worked on runner A, then on runner B, then on
// A again gets B's newer work (takeOverAndBack); A's old copies are set
// aside on the person's own disk, beside its bound directories, out of
// every run's sight (not in the workspace, not in <Root>/.stale/).
func TestDiskTakeOverRestoresNewerSnapshot(t *testing.T) {
	needDisks(t)
	e := newRunnerEnv(t)
	onA := takeOverAndBack(t, e, Config{DiskQuota: testDiskQuota})
	olds, _ := filepath.Glob(filepath.Join(onA, disksDir, "*", "stale", "*", "*", "only-a"))
	if len(olds) != 2 {
		t.Errorf("A's old copies on the person's disk: %q; want the default workspace's and app's", olds)
	}
	if _, err := os.Lstat(filepath.Join(onA, ".stale")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s/.stale: %v; want none (the copies are on the person's disk)", onA, err)
	}
	// A run that fills the disk: the copies, which the person cannot see
	// to delete, are removed.
	u := e.user(contract.ChannelWeb, "back")
	e.run(contract.Job{ID: "fill", User: u, Text: "dd if=/dev/zero of=big bs=1M count=100"})
	if olds, _ := filepath.Glob(filepath.Join(onA, disksDir, "*", "stale")); len(olds) != 0 {
		t.Errorf("old copies once the disk is full: %q; want them removed", olds)
	}
}

// A person's disk is let go with the last that used it: once their home
// is gone (here pushed out by another person's, with one home kept) and no
// run is in it, their disk is unmounted, so a runner that has served many
// people does not keep a mounted disk (a loop device, a journal thread)
// for each of them. Their next run mounts it again, with what they left.
func TestDiskLetGoWithItsHome(t *testing.T) {
	needDisks(t)
	e := newRunnerEnv(t)
	cfg := Config{Timeout: time.Minute, Sandbox: &sandbox.Sandbox{}, DiskQuota: testDiskQuota, HomesMax: 1, HomeIdle: time.Hour}
	e.start(cfg)
	a, b := e.user(contract.ChannelWeb, "diskGoneA"), e.user(contract.ChannelWeb, "diskGoneB")

	e.job(a, "write", "echo kept > note && echo written")
	if ev := e.waitDone(a, "write", runnerWait); ev.Text != "written" {
		t.Fatalf("a's first run: got %q; want written", ev.Text)
	}
	e.job(b, "other", "echo b")
	if ev := e.waitDone(b, "other", runnerWait); ev.Text != "b" {
		t.Fatalf("b's run: got %q; want b", ev.Text)
	}
	disks := filepath.Join(e.workspaces, disksDir)
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := mountsUnder(t, disks); n != 1 {
			return fmt.Errorf("disks mounted under %s: %d; want 1 (b's: a's home was let go, and a has no run)", disks, n)
		}
		return nil
	})
	e.job(a, "read", "cat note")
	if ev := e.waitDone(a, "read", runnerWait); ev.Text != "kept" {
		t.Errorf("a's run after their disk was let go: got %q; want kept", ev.Text)
	}
}

// mountsUnder counts the mounts whose mount point is right under dir (the
// disks themselves, not the binds of their directories).
func mountsUnder(t *testing.T, dir string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && filepath.Dir(f[4]) == dir {
			n++
		}
	}
	return n
}
