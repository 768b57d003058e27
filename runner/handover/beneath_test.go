package handover

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/textslash/textslash/runner/sandbox"
)

// victimDir is a directory only root may enter, holding a file: what a
// workspace's links point at in the attacks below.
func victimDir(t *testing.T) (dir, file string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the attacks need textslash running as root")
	}
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "precious")
	if err := os.WriteFile(file, []byte("root's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// `ln -s /root-only tmp/ai_screenshots`: the runner neither lists nor
// deletes the target's files.
func TestDropDirLinkOutside(t *testing.T) {
	victim, file := victimDir(t)
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(ws, DropDir)); err != nil {
		t.Fatal(err)
	}
	if got := dropped(ws); len(got) != 0 {
		t.Errorf("dropped files through the link: %+v", got)
	}
	if err := sandbox.RemoveBeneath(ws, filepath.Join(DropDir, "precious")); err == nil {
		t.Error("removed a file through the link")
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the link's target lost its file: %v", err)
	}
}
