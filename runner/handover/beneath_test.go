package handover

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/textslash/textslash/runner/internal/testkit"
	"github.com/textslash/textslash/runner/sandbox"
)

// `ln -s /root-only tmp/ai_screenshots`: the runner neither lists nor
// deletes the target's files.
func TestDropDirLinkOutside(t *testing.T) {
	victim, file := testkit.VictimDir(t)
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
