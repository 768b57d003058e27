package disk

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A person's directories lead to their disk by links, and the host's
// mount table holds the disk alone, at its opaque id: no mount point names
// the person (a sandbox copies the host's mount table whole).
func TestDiskMountsNameNoPerson(t *testing.T) {
	needLoop(t)
	root := t.TempDir()
	key := "whatsapp.p_15551234567"
	d := openDisks(t, root, testQuota)
	k, err := d.Mount(t.Context(), key, bindsOf(root, key))
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	for _, b := range bindsOf(root, key) {
		to, err := os.Readlink(b.Target)
		if want := filepath.Join(k.dir, b.Name); err != nil || filepath.Join(filepath.Dir(b.Target), to) != want || filepath.IsAbs(to) {
			t.Errorf("%s: links to %q, %v; want a relative link to %s", b.Target, to, err, want)
		}
	}
	if points := mountPoints(t, root); len(points) != 1 || points[0] != k.dir {
		t.Errorf("mounts under %s: %q; want the disk alone, at %s", root, points, k.dir)
	}
}

// A runner before this one bound the disk's directories onto the
// person's (and a killed one leaves its mounts): the next unbinds them at
// Open, for every disk (not only those mounted again), and links the
// person's directories at their next Mount; what the bind hid beside the
// disk is set aside out of every run's sight, not mixed with the
// person's files.
func TestDiskOlderRunnersBindsUndone(t *testing.T) {
	needLoop(t)
	root := t.TempDir()
	key := "web.older"
	d1 := openDisks(t, root, testQuota)
	k, err := d1.Mount(t.Context(), key, bindsOf(root, key))
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, key, "mine"), []byte("on the disk"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The older runner's layout: each directory a bind of the disk's, one
	// hiding a file written beside the disk.
	for _, b := range bindsOf(root, key) {
		if err := os.Remove(b.Target); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(b.Target, 0o755); err != nil {
			t.Fatal(err)
		}
		if b.Name == "workspace" {
			if err := os.WriteFile(filepath.Join(b.Target, "beside"), []byte("hidden"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Mount(filepath.Join(k.dir, b.Name), b.Target, "", unix.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, b := range bindsOf(root, key) {
			_ = unix.Unmount(b.Target, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW) // when the test failed
		}
	})
	if n := len(mountPoints(t, root)); n != 5 {
		t.Fatalf("mounts under %s before: %d; want 5 (the disk and its four binds)", root, n)
	}

	// A runner killed: no Close.
	d2 := openDisks(t, root, testQuota)
	if points := mountPoints(t, root); len(points) != 1 || points[0] != k.dir {
		t.Errorf("mounts under %s once the next runner opened its disks: %q; want the disk alone", root, points)
	}
	if _, err := d2.Mount(t.Context(), key, bindsOf(root, key)); err != nil {
		t.Fatalf("Mount after the older runner's binds: %v", err)
	}
	for _, b := range bindsOf(root, key) {
		if fi, err := os.Lstat(b.Target); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s: %v, %v; want a link to the disk", b.Target, fi, err)
		}
	}
	if got, err := os.ReadFile(filepath.Join(root, key, "mine")); err != nil || string(got) != "on the disk" {
		t.Errorf("the person's file: %q, %v; want it", got, err)
	}
	if _, err := os.Lstat(filepath.Join(root, key, "beside")); err == nil {
		t.Errorf("the file written beside the disk is in the person's workspace; want it set aside")
	}
	aside, _ := filepath.Glob(filepath.Join(root, ".disks", besideDir, "*", "beside"))
	if len(aside) != 1 {
		t.Fatalf("set aside: %q; want the file written beside the disk", aside)
	}
	if got, err := os.ReadFile(aside[0]); err != nil || string(got) != "hidden" {
		t.Errorf("%s: %q, %v; want hidden", aside[0], got, err)
	}
}

// mountPoints are the mount points under root, in this process's mount
// namespace.
func mountPoints(t *testing.T, root string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(unescape(f[4]), root+"/") {
			points = append(points, unescape(f[4]))
		}
	}
	return points
}
