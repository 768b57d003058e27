package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/runner/internal/testkit"
)

// A runner killed (kill -9, a crash) cannot remove its runs' cgroups: the
// next runner to start on the machine removes them, and what is still in
// them, and leaves the cgroups of runners alive alone. Before, every home
// a killed runner had left its cgroups for ever (thousands on a machine
// that ran the tests a day), each making the next cgroup's CPU limit
// slower to set.
func TestCgroupsOfADeadRunnerRemoved(t *testing.T) {
	if os.Getenv("TEXTSLASH_TEST_CGROUP_HOLDER") != "" {
		holdCgroup()
		return
	}
	if err := cgroupsWritable(); err != nil {
		t.Skip(err)
	}
	// Another runner, as a process of its own: it makes a cgroup with a
	// process in it, says where, and is killed.
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgroupsOfADeadRunnerRemoved$")
	cmd.Env = append(os.Environ(), "TEXTSLASH_TEST_CGROUP_HOLDER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the other runner said nothing: %v", err)
	}
	dead := strings.Fields(line)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()

	// This runner's own cgroup, alive.
	mine, err := NewCgroup("sweep-alive", Limits{Pids: 8}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Kill()

	box := &Sandbox{Limits: Limits{Pids: 8}}
	if _, err := box.Ready(nil, t.TempDir(), "", zerolog.Nop()); err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s of a runner killed is still there after the next runner started", d)
		}
	}
	for _, d := range mine.dirs() {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("cgroup %s of a runner alive: %v; want it kept", d, err)
		}
	}
}

// holdCgroup is the runner killed: a cgroup with a process in it (a
// sleep the kill leaves running), its directories on stdout.
func holdCgroup() {
	cg, err := NewCgroup("sweep-dead", Limits{Pids: 8, Memory: 64 << 20}, -1, -1)
	if err != nil {
		os.Exit(2)
	}
	name, args := cg.joinArgs("sleep", []string{"300.4343"})
	if err := exec.Command(name, args...).Start(); err != nil {
		os.Exit(2)
	}
	os.Stdout.WriteString(strings.Join(cg.dirs(), " ") + "\n")
	select {}
}

// A runner that is not root, started after a root one left textslash's
// cgroups root's, cannot make its runs' cgroups there: it says so at
// start, naming the owner, and runs without cgroups. Before, the
// directories being there passed for writable, and every run then
// failed on its cgroup ("permission denied").
func TestCgroupsOfRootNotWritableByAnother(t *testing.T) {
	if os.Getenv("TEXTSLASH_TEST_CGROUP_PROBE") != "" {
		if err := cgroupsWritable(); err != nil {
			os.Stdout.WriteString("not writable: " + err.Error() + "\n")
		} else {
			os.Stdout.WriteString("writable\n")
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to leave the cgroups root's")
	}
	if err := cgroupsWritable(); err != nil {
		t.Skip(err)
	}
	out, err := testkit.AsUser(t, "nobody", []string{"TEXTSLASH_TEST_CGROUP_PROBE=1"}, "-test.run=^TestCgroupsOfRootNotWritableByAnother$")
	if err != nil {
		t.Fatalf("the probe as nobody: %v\n%s", err, out)
	}
	got, _, _ := strings.Cut(out, "\n")
	t.Log(got)
	if !strings.HasPrefix(got, "not writable: ") || !strings.Contains(got, "root") {
		t.Errorf("as nobody, with textslash's cgroups root's: %q; want not writable, naming root as their owner", got)
	}
}
