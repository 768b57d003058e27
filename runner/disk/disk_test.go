package disk

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

const testQuota = 64 << 20

// needLoop skips where disks cannot be made: not root, or no loop
// devices.
func needLoop(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("disks need root (loop devices and mounts)")
	}
	if _, err := os.Stat(loopControl); err != nil {
		tb.Skipf("disks need %s: %v", loopControl, err)
	}
}

// openDisks opens disks of quota under root, closed when the test ends
// (before root is removed).
func openDisks(tb testing.TB, root string, quota int64) *Disks {
	tb.Helper()
	d, err := Open(zerolog.New(zerolog.NewTestWriter(tb)).WithContext(tb.Context()), filepath.Join(root, ".disks"), quota)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := d.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return d
}

// bindsOf are a person's four directories under root, as the runner lays
// them out.
func bindsOf(root, key string) []Bind {
	return []Bind{
		{"workspace", filepath.Join(root, key)},
		{"projects", filepath.Join(root, ".projects", key)},
		{"worktrees", filepath.Join(root, ".worktrees", key)},
		{"home", filepath.Join(root, ".home", key)},
	}
}

// dd writes mb MiB of zeros to file, returning dd's output and error.
func dd(file string, mb int) (string, error) {
	out, err := exec.Command("dd", "if=/dev/zero", "of="+file, "bs=1M", "count="+strconv.Itoa(mb)).CombinedOutput()
	return string(out), err
}

func TestDiskBoundsAPerson(t *testing.T) {
	needLoop(t)
	root := t.TempDir()
	d := openDisks(t, root, testQuota)
	a, err := d.Mount(t.Context(), "web.a", bindsOf(root, "web.a"))
	if err != nil {
		t.Fatalf("Mount a: %v", err)
	}
	b, err := d.Mount(t.Context(), "web.b", bindsOf(root, "web.b"))
	if err != nil {
		t.Fatalf("Mount b: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "web.b", "kept"), []byte("b's"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Past the quota, across a's directories: the write fails, ENOSPC.
	out, err := dd(filepath.Join(root, ".home", "web.a", "big"), 100)
	if err == nil || !strings.Contains(out, "No space left on device") {
		t.Fatalf("dd of 100 MB into a 64 MB disk: got %v %q; want No space left on device", err, out)
	}
	if _, err := dd(filepath.Join(root, ".projects", "web.a", "more"), 10); err == nil {
		t.Errorf("dd into a's projects once the disk is full: got nil; want an error")
	}
	used, size, full, err := a.Usage()
	if err != nil || !full || size != testQuota || used < size*99/100 {
		t.Errorf("a's Usage: got %d of %d, full %v, %v; want full, %d", used, size, full, err, testQuota)
	}
	// The host kept its space (the image is sparse: at most the quota),
	// and b is untouched.
	// What a's image takes on the host's disk (its allocated blocks, not
	// the host's free space, which other programs' writes move too).
	imgs, _ := filepath.Glob(filepath.Join(root, ".disks", "*.img"))
	var taken int64
	for _, img := range imgs {
		var st unix.Stat_t
		if err := unix.Stat(img, &st); err == nil {
			taken = max(taken, st.Blocks*512)
		}
	}
	if len(imgs) == 0 || taken > testQuota+(8<<20) {
		t.Errorf("a's image takes %d bytes of the host's disk (%d images); want at most the quota", taken, len(imgs))
	}
	if got, err := os.ReadFile(filepath.Join(root, "web.b", "kept")); err != nil || string(got) != "b's" {
		t.Errorf("b's file: got %q, %v; want b's", got, err)
	}
	if _, _, full, _ := b.Usage(); full {
		t.Errorf("b's disk full after a's write; want b untouched")
	}
	if _, err := dd(filepath.Join(root, "web.b", "ten"), 10); err != nil {
		t.Errorf("dd of 10 MB into b: %v", err)
	}

	// a deletes and writes again.
	if err := os.Remove(filepath.Join(root, ".home", "web.a", "big")); err != nil {
		t.Fatal(err)
	}
	if out, err := dd(filepath.Join(root, "web.a", "again"), 20); err != nil {
		t.Errorf("dd of 20 MB into a after deleting: %v %s", err, out)
	}
	if _, _, full, _ := a.Usage(); full {
		t.Errorf("a's disk full after deleting; want room")
	}
}

func TestDiskKeptAcrossRestarts(t *testing.T) {
	needLoop(t)
	root := t.TempDir()
	key := "whatsapp.15551230000"
	// What the person had before disks were bounded moves in.
	if err := os.MkdirAll(filepath.Join(root, key, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, key, "src", "old.txt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	d1, err := Open(t.Context(), filepath.Join(root, ".disks"), testQuota)
	if err != nil {
		t.Fatal(err)
	}
	k1, err := d1.Mount(t.Context(), key, bindsOf(root, key))
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, ".home", key, "new.txt"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The image is named by an opaque id, not the person's key.
	if strings.Contains(k1.image, "15551230000") || strings.Contains(k1.dir, "15551230000") {
		t.Errorf("image %s, mounted on %s: want no trace of the person's key", k1.image, k1.dir)
	}

	// A runner killed (no Close): the next finds the disk mounted.
	d2 := openDisks(t, root, testQuota)
	k2, err := d2.Mount(t.Context(), key, bindsOf(root, key))
	if err != nil {
		t.Fatalf("Mount after a runner killed: %v", err)
	}
	if k2.image != k1.image {
		t.Errorf("after a restart: image %s; want %s", k2.image, k1.image)
	}
	checkFiles(t, root, key)
	// A clean stop, then a start: mounted anew, the files there.
	if err := d2.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, key, "src", "old.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old.txt after Close: got %v; want it on the disk only, not on the host", err)
	}
	d3 := openDisks(t, root, testQuota)
	if _, err := d3.Mount(t.Context(), key, bindsOf(root, key)); err != nil {
		t.Fatalf("Mount after a clean stop: %v", err)
	}
	checkFiles(t, root, key)
}

func checkFiles(t *testing.T, root, key string) {
	t.Helper()
	for file, want := range map[string]string{
		filepath.Join(root, key, "src", "old.txt"):   "old",
		filepath.Join(root, ".home", key, "new.txt"): "new",
	} {
		if got, err := os.ReadFile(file); err != nil || string(got) != want {
			t.Errorf("%s: got %q, %v; want %q", file, got, err, want)
		}
	}
}

func TestDiskGrowsWithTheQuota(t *testing.T) {
	needLoop(t)
	root := t.TempDir()
	key := "web.grow"
	d1 := openDisks(t, root, testQuota)
	if _, err := d1.Mount(t.Context(), key, bindsOf(root, key)); err != nil {
		t.Fatal(err)
	}
	if err := d1.Close(); err != nil {
		t.Fatal(err)
	}
	d2 := openDisks(t, root, 2*testQuota)
	k, err := d2.Mount(t.Context(), key, bindsOf(root, key))
	if err != nil {
		t.Fatalf("Mount with a larger quota: %v", err)
	}
	if out, err := dd(filepath.Join(root, key, "big"), 100); err != nil {
		t.Errorf("dd of 100 MB into a disk grown to 128 MB: %v %s", err, out)
	}
	if _, size, _, _ := k.Usage(); size != 2*testQuota {
		t.Errorf("size: got %d; want %d", size, 2*testQuota)
	}
	if err := d2.Close(); err != nil {
		t.Fatal(err)
	}
	// A smaller quota does not shrink it.
	d3 := openDisks(t, root, testQuota)
	k, err = d3.Mount(t.Context(), key, bindsOf(root, key))
	if err != nil {
		t.Fatalf("Mount with a smaller quota: %v", err)
	}
	if _, size, _, _ := k.Usage(); size != 2*testQuota {
		t.Errorf("size after the quota shrank: got %d; want %d (kept)", size, 2*testQuota)
	}
}

// BenchmarkFirstMount measures a person's first disk: the image made (or
// taken from those made ahead), mounted and its four directories linked
// to it. made-ahead: each mount waits for the pool to be full first, as a
// newcomer on a runner with time between newcomers; one-after-another:
// no wait, the pool drained as in a crowd of newcomers.
func BenchmarkFirstMount(b *testing.B) {
	needLoop(b)
	for _, wait := range []bool{true, false} {
		name := map[bool]string{true: "made-ahead", false: "one-after-another"}[wait]
		b.Run(name, func(b *testing.B) {
			root := b.TempDir()
			d := openDisks(b, root, 5<<30)
			for i := 0; b.Loop(); i++ {
				if wait {
					b.StopTimer()
					for len(d.pool.ready()) < PoolSize {
						time.Sleep(time.Millisecond)
					}
					b.StartTimer()
				}
				key := "web.bench" + strconv.Itoa(i)
				if _, err := d.Mount(b.Context(), key, bindsOf(root, key)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// What a person had that does not fit on their disk stays where it was.
func TestDiskTooFull(t *testing.T) {
	needLoop(t)
	root := t.TempDir()
	key := "web.big"
	big := filepath.Join(root, ".home", key, "big")
	if err := os.MkdirAll(filepath.Dir(big), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := dd(big, 100); err != nil {
		t.Fatalf("dd: %v %s", err, out)
	}
	d := openDisks(t, root, testQuota)
	for try := range 2 {
		if _, err := d.Mount(t.Context(), key, bindsOf(root, key)); !errors.Is(err, ErrTooFull) {
			t.Errorf("Mount %d of 100 MB into 64 MB: got %v; want ErrTooFull", try, err)
		}
	}
	if fi, err := os.Stat(big); err != nil || fi.Size() != 100<<20 {
		t.Errorf("the file that did not fit: got %v, %v; want it where it was, whole", fi, err)
	}
	if fi, err := os.Lstat(filepath.Join(root, ".home", key)); err != nil || !fi.IsDir() {
		t.Errorf("the home: %v, %v; want a directory still, not a link to the disk", fi, err)
	}
}

// Without e2fsprogs, Open says disks cannot be bounded here.
func TestDiskUnsupported(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := Open(t.Context(), filepath.Join(t.TempDir(), ".disks"), testQuota); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Open without mkfs.ext4: got %v; want ErrUnsupported", err)
	}
}
