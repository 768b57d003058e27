package runner

import (
	"os"
	"strings"
	"testing"

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
