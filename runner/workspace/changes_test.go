package workspace

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/sandbox"
)

// `git init; mkfifo /tmp/f; ln -s /tmp/f link`: looking for changes to
// approve reads no FIFO (it would wait forever for a writer).
func TestPendingChangesFIFO(t *testing.T) {
	ws, home := t.TempDir(), t.TempDir()
	fifo := filepath.Join(t.TempDir(), "f")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	run := &agent.Run{Dir: ws, Command: sandbox.CommandFunc(ws, home, nil, false)}
	init := run.Command(t.Context(), "git", "init", "-q")
	if out, err := init.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := os.Symlink(fifo, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "inside"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan Changes, 1)
	go func() {
		ch, _ := Pending(context.Background(), run)
		done <- ch
	}()
	select {
	case ch := <-done:
		if ch.Summary == "" {
			t.Error("no changes found")
		}
	case <-time.After(30 * time.Second): // a hang, not a speed limit
		t.Fatal("Pending blocked on the FIFO")
	}
}
