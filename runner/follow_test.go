package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
)

// A snapshot that cannot be restored: the person is told without the
// runner's internals, and the project is not left behind empty (the next
// job tries the restore again rather than run in an empty directory).
func TestRestoreFailureLeavesNoEmptyProject(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: runnerWait, Snapshots: true})
	u := e.user(contract.ChannelWeb, "alice")
	obs, err := e.js.ObjectStore(t.Context(), contract.BucketSnapshots)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.PutBytes(t.Context(), contract.SnapshotName(u, "app"), []byte("not a snapshot")); err != nil {
		t.Fatal(err)
	}
	ev := e.run(contract.Job{ID: "m1", User: u, Project: "app", Text: "pwd"})
	if ev.Status != contract.StatusError || !strings.Contains(ev.Text, "No project app here") {
		t.Errorf("done %q %q; want the project reported missing", ev.Status, ev.Text)
	}
	var told []string
	for _, n := range e.events(u, contract.KindNotice) {
		told = append(told, n.Text)
	}
	if len(told) != 1 || !strings.Contains(told[0], "could not be brought over") || strings.Contains(told[0], "/") {
		t.Errorf("notices %q; want one saying the project could not be brought over, naming no path", told)
	}
	if _, err := os.Lstat(e.projectDir(u, "app")); err == nil {
		t.Error("the failed restore left the project's directory behind")
	}
}

// takeOverAndBack: a person worked on runner A, then on runner B (A
// gone), then on A again (B gone); A must give them B's newer work, from
// B's snapshots, for their default workspace and for a named project,
// not its own old copies. The named project is asked for first: the
// default workspace, set aside at the take-over, is still restored at its
// own later job. cfg is completed here; it returns A's workspaces.
func takeOverAndBack(t *testing.T, e *runnerEnv, cfg Config) (onA string) {
	t.Helper()
	url := "file://" + bareRepo(t)
	// No sandbox: the clone reads the repository where it is.
	cfg.ID, cfg.Timeout, cfg.Snapshots = "a", time.Minute, true
	u := e.user(contract.ChannelWeb, "back")
	onA = e.workspaces
	write := func(id, project, text string) {
		t.Helper()
		// (In app, the changes left in its checkout are said after.)
		if ev := e.run(contract.Job{ID: id, User: u, Project: project, Text: text}); !strings.HasPrefix(ev.Text, "ok") {
			t.Fatalf("%s: got %q; want ok first", id, ev.Text)
		}
	}

	stop := e.start(cfg)
	if ev := e.clone(u, "clone", url, "app"); ev.Status != contract.StatusOK {
		t.Fatalf("clone: %q", ev.Text)
	}
	for _, p := range []string{"", "app"} {
		write("a-"+p, p, "echo a > note && echo a > only-a && echo ok")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	e.workspaces, cfg.ID = t.TempDir(), "b" // another machine
	stop = e.start(cfg)
	for _, p := range []string{"", "app"} {
		write("b-"+p, p, "grep -qx a note && rm only-a && echo b > note && echo ok")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	e.workspaces, cfg.ID = onA, "a" // back on A
	e.start(cfg)
	for _, p := range []string{"app", ""} {
		ev := e.run(contract.Job{ID: "back-" + p, User: u, Project: p, Text: "cat note; ls"})
		got, _, _ := strings.Cut(ev.Text, "\n\n")
		if got != "b\nnote" && !(p == "app" && got == "b\nREADME.md\napp.txt\nnote") {
			t.Errorf("project %q back on A: got %q; want B's note (b) and no only-a (restored from B's snapshot)", p, ev.Text)
		}
	}
	return onA
}

// Without disks, A's old copies go to <Root>/.stale/.
func TestTakeOverRestoresNewerSnapshot(t *testing.T) {
	e := newRunnerEnv(t)
	onA := takeOverAndBack(t, e, Config{})
	olds, _ := filepath.Glob(filepath.Join(onA, ".stale", "*", "*", "only-a"))
	if len(olds) != 2 {
		t.Errorf("A's old copies: %q; want the default workspace's and app's under %s/.stale", olds, onA)
	}
}
