package runner

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// kernelNames is a run's command printing what the kernel names of the
// machine's mounts, cgroups and loop devices, where any program of the run
// can read it.
const kernelNames = `cat /proc/self/mountinfo /proc/mounts /proc/self/cgroup
for f in /sys/block/*/loop/backing_file; do echo "$f $(cat "$f")"; done`

// What the kernel shows a person's run names nobody: with two people's
// disks bound (person A, on WhatsApp, first; then person B, whose home is
// made while A's disk and home are there), B's mount table, mounts,
// cgroup and the loop devices' backing files hold no line naming A (their
// key, their id, their phone number), and A's, read again once B's disk is
// bound (a mount the host makes later reaches a home made before it, where
// the host's mounts propagate), none naming B. Issue 42: every person's
// directories were bind-mounted at their own names in the runner's mount
// namespace, and each home's copy of the host's mounts listed them. B's
// run still works at B's own directory, not at their disk's.
func TestHomeMountsNameNoPerson(t *testing.T) {
	needDisks(t)
	if sandbox.ProbeHomes() != nil {
		t.Skip("homes need root")
	}
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute, Sandbox: &sandbox.Sandbox{}, DiskQuota: testDiskQuota, HomeIdle: time.Hour})
	a, b := e.user(contract.ChannelWhatsApp, "p_15551234567"), e.user(contract.ChannelWeb, "mountsb")

	e.job(a, "first", "echo a > note && echo written")
	if ev := e.waitDone(a, "first", runnerWait); ev.Text != "written" {
		t.Fatalf("A's first run: got %q; want written", ev.Text)
	}
	e.job(b, "look", "pwd -P; "+kernelNames)
	seen := e.waitDone(b, "look", runnerWait).Text
	// The run works where it always did, its disk bound at its person's
	// directory in its own sandbox; Sandbox.Seen says so (snapshots name
	// Claude Code's sessions by it).
	ws, err := filepath.EvalSymlinks(e.workspaces)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.workspaces, b.Key())
	box := sandbox.Sandbox{Hide: []string{e.workspaces}} // as Ready makes it
	if pwd, _, _ := strings.Cut(seen, "\n"); pwd != filepath.Join(ws, b.Key()) || box.Seen(dir) != pwd {
		t.Errorf("B's working directory: %q, Seen %q; want %q", pwd, box.Seen(dir), filepath.Join(ws, b.Key()))
	}
	e.job(a, "again", kernelNames)
	seenByA := e.waitDone(a, "again", runnerWait).Text

	for _, c := range []struct {
		who, text string
		of        contract.User
		names     []string
	}{
		{"B", seen, a, []string{a.Key(), a.ID, "15551234567"}},
		{"A, once B's disk is bound", seenByA, b, []string{b.Key(), b.ID}},
	} {
		// Not empty for a command that failed: the run saw its mounts and
		// the disks' loop devices.
		if !strings.Contains(c.text, " /proc ") || !strings.Contains(c.text, "/loop/backing_file ") {
			t.Errorf("what %s read: %q; want its mount table and the loop devices' backing files", c.who, c.text)
			continue
		}
		var named []string
		for _, line := range strings.Split(c.text, "\n") {
			for _, n := range c.names {
				if strings.Contains(line, n) {
					named = append(named, line)
					break
				}
			}
		}
		if len(named) > 0 {
			t.Errorf("%d lines of what %s's run reads of the kernel name %s (%q):\n%s", len(named), c.who, c.of, c.names, strings.Join(named, "\n"))
		}
	}
}
