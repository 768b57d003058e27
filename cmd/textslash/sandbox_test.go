package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reply sends text on c and returns the text of its done event.
func (c *chat) reply(events <-chan sseEvent, text string, timeout time.Duration) string {
	c.t.Helper()
	id := c.send(text)
	return waitFor(c.t, events, timeout, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == id }).Event.Text
}

// Two people on one textslash, one of them an attacker: what B's agent
// can reach of A, of textslash and of the machine.
func TestSandboxIsolation(t *testing.T) {
	eachRunner(t, sandboxIsolation)
}

func sandboxIsolation(t *testing.T, start func(env ...string) *instance) {
	const mediaKey = "media-key-the-agents-must-not-see"
	inst := start("TEXTSLASH_AGENT=shell", "TEXTSLASH_MEDIA_KEY="+mediaKey)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := inst.newChat(t), inst.newChat(t)
	aEvents, bEvents := a.events(ctx), b.events(ctx)
	if got := a.reply(aEvents, "echo secret-of-a > secret.txt && mkdir -p .private && echo ok", 30*time.Second); got != "ok" {
		t.Fatalf("A's setup: %q", got)
	}
	pid := inst.cmd.Process.Pid
	for _, tc := range []struct{ name, cmd, mustNot string }{
		{"A's files by glob", "cat ../*/secret.txt 2>&1; ls -a .. 2>&1", "secret-of-a"},
		{"A's workspace by name", "cat " + inst.Data + "/workspaces/" + a.User.Key() + "/secret.txt 2>&1", "secret-of-a"},
		{"A's workspace listed", "ls -a " + inst.Data + "/workspaces 2>&1", a.User.Key()},
		{"A's home listed", "ls -a " + inst.Data + "/workspaces/.home 2>&1", a.User.Key()},
		{"the data directory", "ls -R " + inst.Data + " 2>&1 | head -50", "jetstream"},
		{"NATS logins", "cat " + inst.Data + "/nats/admin.env 2>&1", "NATS_PASSWORD"},
		{"textslash's environment", fmt.Sprintf("cat /proc/%d/environ 2>&1; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'", pid), mediaKey},
		{"textslash's processes", "ps -eo pid,args 2>&1", "textslash"},
	} {
		if got := b.reply(bEvents, tc.cmd, 30*time.Second); strings.Contains(got, tc.mustNot) {
			t.Errorf("%s: B's agent saw %q:\n%s", tc.name, tc.mustNot, got)
		}
	}
	// B writes nothing outside its workspace.
	b.reply(bEvents, "echo x > "+inst.Data+"/planted 2>&1; echo x > /tmp/planted-by-b 2>&1; echo done", 30*time.Second)
	for _, p := range []string{inst.Data + "/planted", "/tmp/planted-by-b"} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("B's agent wrote %s", p)
			os.Remove(p)
		}
	}

	// A's run is going; B cannot signal it, and what B's run started
	// (setsid, a clean environment) ends with B's run.
	aID := a.send("sleep 3; echo a-finished")
	waitFor(t, aEvents, 10*time.Second, func(ev sseEvent) bool { return ev.Kind == "started" && ev.Event.JobID == aID })
	b.reply(bEvents, "pkill -f 'sleep 3'; (setsid env -i /bin/sleep 313 &) ; echo tried", 30*time.Second)
	if got := waitFor(t, aEvents, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" && ev.Event.JobID == aID }).Event.Text; got != "a-finished" {
		t.Errorf("A's run ended %q; want a-finished (B could not stop it)", got)
	}
	if out, err := exec.Command("pgrep", "-f", "sleep 313").Output(); err == nil {
		t.Errorf("a process B's run started outlived it: %s", out)
	}
}

// A fork bomb and a memory hog end their own runs, with a message naming
// the limit; the other person's next message runs as usual.
func TestSandboxLimits(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_RUN_MEMORY=256M", "TEXTSLASH_RUN_PIDS=64", "TEXTSLASH_TIMEOUT=60s")
	// Never a fork bomb without a limit to stop it.
	if logs, _ := os.ReadFile(inst.Log); !strings.Contains(string(logs), `"limited":true`) {
		t.Fatalf("runs are not limited here (cgroups not writable?); not running the bomb:\n%s", tail(string(logs), 2000))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := inst.newChat(t), inst.newChat(t)
	aEvents, bEvents := a.events(ctx), b.events(ctx)
	if got := a.reply(aEvents, `bomb() { bomb | bomb & }; bomb; sleep 50`, 50*time.Second); !strings.Contains(got, "limit of 64 processes") {
		t.Errorf("fork bomb's reply %q; want the process limit named", got)
	}
	if got := b.reply(bEvents, "head -c 1G /dev/zero | tail; echo survived", 50*time.Second); !strings.Contains(got, "limit of 256 MB memory") {
		t.Errorf("memory hog's reply %q; want the memory limit named", got)
	}
	if got := a.reply(aEvents, "echo still here", 30*time.Second); got != "still here" {
		t.Errorf("after the limits: %q; want still here", got)
	}
}

// A data directory only textslash may enter (0700, as a fresh one is
// made) still lets the agent user reach its workspace: textslash gives
// the directories above the workspaces o+x (passing, not listing) at
// start, instead of every run failing with "permission denied".
func TestAgentUserUnderPrivateDataDir(t *testing.T) {
	u := os.Getenv("TEXTSLASH_TEST_AGENT_USER")
	if u == "" || os.Geteuid() != 0 {
		t.Skip("needs root and TEXTSLASH_TEST_AGENT_USER")
	}
	data := filepath.Join(t.TempDir(), "private", "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(data), 0o700); err != nil {
		t.Fatal(err)
	}
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_AGENT_USER="+u, "TEXTSLASH_DATA="+data)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := inst.newChat(t)
	if got := c.reply(c.events(ctx), "id -un; ls "+data+" 2>&1 | head -3", 30*time.Second); !strings.HasPrefix(got, u+"\n") {
		t.Errorf("reply %q; want it run as %s", got, u)
	}
	fi, err := os.Stat(data)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o701 {
		t.Errorf("data directory mode %v; want 0701 (others pass, never list)", fi.Mode().Perm())
	}
}

// `git init; mkfifo f; ln -s f link`: the end of the run (looking for
// changes to approve) reads no FIFO, so the run ends, the person's next
// message runs and so does everybody else's.
func TestFIFOInWorkspace(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := inst.newChat(t), inst.newChat(t)
	aEvents, bEvents := a.events(ctx), b.events(ctx)
	trap := "git init -q && mkfifo f && ln -s f link && mkfifo /tmp/g && ln -s /tmp/g link2 && echo set"
	// The links are new files: the run asks for approval, its summary made
	// without waiting on the FIFOs.
	if got := a.reply(aEvents, trap, 60*time.Second); !strings.HasPrefix(got, "set") || !strings.Contains(got, "link") {
		t.Fatalf("reply %q; want set and the changes to approve", got)
	}
	a.send("reject")
	if got := a.reply(aEvents, "echo next", 30*time.Second); !strings.HasPrefix(got, "next") {
		t.Errorf("A's next message: %q", got)
	}
	if got := b.reply(bEvents, "echo b", 30*time.Second); got != "b" {
		t.Errorf("B's message: %q", got)
	}
}
