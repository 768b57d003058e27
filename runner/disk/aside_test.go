package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// SetAside moves a person's old workspace and project off their bound
// directories to stale/ on their disk: the workspace, a link to the disk,
// emptied in place (and the disk Fresh again), the project moved whole;
// the disk keeps the newest set only; DropStale frees them.
func TestDiskSetAside(t *testing.T) {
	needLoop(t)
	root := t.TempDir()
	key := "web.aside"
	d := openDisks(t, root, testQuota)
	k, err := d.Mount(t.Context(), key, bindsOf(root, key))
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	ws, app := filepath.Join(root, key), filepath.Join(root, ".projects", key, "app")
	write := func(path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "src", "f"))
	write(filepath.Join(app, "g"))
	if err := k.Used(); err != nil {
		t.Fatal(err)
	}

	to, err := k.SetAside(ws, "s1", "default")
	if err != nil {
		t.Fatalf("SetAside of the workspace: %v", err)
	}
	if entries, err := os.ReadDir(ws); err != nil || len(entries) != 0 || !k.Fresh() {
		t.Errorf("workspace after SetAside: %v, %v, fresh %v; want there (a link to the disk), empty, fresh", entries, err, k.Fresh())
	}
	if b, err := os.ReadFile(filepath.Join(to, "src", "f")); err != nil || string(b) != "old" {
		t.Errorf("set aside at %s: %q, %v; want the workspace's file", to, b, err)
	}
	toApp, err := k.SetAside(app, "s1", "app")
	if err != nil {
		t.Fatalf("SetAside of a project: %v", err)
	}
	if _, err := os.Lstat(app); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("project after SetAside: %v; want gone", err)
	}
	for _, p := range []string{to, toApp} {
		// Beside the bound directories, where no run sees.
		if filepath.Dir(filepath.Dir(filepath.Dir(p))) != k.dir || !strings.Contains(p, "/stale/s1/") {
			t.Errorf("set aside at %s; want %s/stale/s1/<name>", p, k.dir)
		}
	}

	// A later set replaces the earlier one.
	write(filepath.Join(ws, "f2"))
	to2, err := k.SetAside(ws, "s2", "default")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(to2, "f2")); err != nil {
		t.Errorf("second set: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(k.dir, staleDir, "s1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the earlier set after a later one: %v; want removed", err)
	}

	for _, bad := range [][3]string{
		{filepath.Join(root, "elsewhere"), "s3", "x"}, // not the person's
		{filepath.Join(app, "deeper"), "s3", "x"},     // not right under a bound directory
		{ws, "..", "x"}, {ws, "s3", "a/b"}, {ws, "s3", ""}, // not single elements
	} {
		if _, err := k.SetAside(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("SetAside(%q, %q, %q): got nil; want an error", bad[0], bad[1], bad[2])
		}
	}

	if dropped, err := k.DropStale(); !dropped || err != nil {
		t.Errorf("DropStale: %v, %v; want true, nil", dropped, err)
	}
	if dropped, err := k.DropStale(); dropped || err != nil {
		t.Errorf("DropStale again: %v, %v; want false, nil", dropped, err)
	}
}

// On a disk too full to make the directory of a set, SetAside removes
// the old copy rather than keep it, so the snapshot restored in its
// place has the room.
func TestDiskSetAsideFull(t *testing.T) {
	needLoop(t)
	root := t.TempDir()
	key := "web.full"
	d := openDisks(t, root, testQuota)
	k, err := d.Mount(t.Context(), key, bindsOf(root, key))
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	ws := filepath.Join(root, key)
	if out, err := dd(filepath.Join(ws, "big"), 100); err == nil {
		t.Fatalf("dd of 100 MB into 64 MB: %s; want the disk full", out)
	}
	// Root makes directories past that (ext4 keeps blocks in reserve):
	// up to where it cannot either.
	for i := 0; ; i++ {
		err := os.Mkdir(filepath.Join(ws, fmt.Sprint("d", i)), 0o755)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil || i > 100_000 {
			t.Fatalf("filling the disk with directories, %d: %v", i, err)
		}
	}
	to, err := k.SetAside(ws, "s1", "default")
	if err != nil || to != "" {
		t.Fatalf("SetAside on a full disk: %q, %v; want \"\", nil (removed)", to, err)
	}
	if entries, _ := os.ReadDir(ws); len(entries) != 0 || !k.Fresh() {
		t.Errorf("workspace: %v, fresh %v; want empty, fresh", entries, k.Fresh())
	}
	if _, full, _ := usage(k); full {
		t.Errorf("disk still full after the old copy was removed")
	}
}

// usage is k's Usage without its error.
func usage(k *Disk) (used int64, full, ok bool) {
	used, _, full, err := k.Usage()
	return used, full, err == nil
}
