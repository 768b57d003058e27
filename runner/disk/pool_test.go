package disk

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
)

// inodes are the inode numbers of the pool's ready images, once it holds
// PoolSize of them.
func poolInodes(t *testing.T, root string) map[uint64]bool {
	t.Helper()
	var inodes map[uint64]bool
	natstest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		names, _ := filepath.Glob(filepath.Join(root, ".disks", poolDir, "*.img"))
		if len(names) != PoolSize {
			return fmt.Errorf("%d images made ahead; want %d", len(names), PoolSize)
		}
		inodes = map[uint64]bool{}
		for _, n := range names {
			info, err := os.Stat(n)
			if err != nil {
				return err
			}
			inodes[info.Sys().(*syscall.Stat_t).Ino] = true
		}
		return nil
	})
	return inodes
}

// A person's first disk is an image made ahead (mkfs.ext4 out of their
// first message), and the pool is filled again; images of another quota
// left by an earlier runner are not used, and are made again at the new
// one. Before, every first disk ran mkfs.ext4 while its person waited.
func TestDiskMadeAhead(t *testing.T) {
	needLoop(t)
	root := t.TempDir()
	d := openDisks(t, root, testQuota)
	ahead := poolInodes(t, root)
	key := "web.ahead"
	k, err := d.Mount(t.Context(), key, bindsOf(root, key))
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	info, err := os.Stat(k.image)
	if err != nil {
		t.Fatal(err)
	}
	if !ahead[info.Sys().(*syscall.Stat_t).Ino] {
		t.Errorf("the person's image %s is not one made ahead", k.image)
	}
	if err := os.WriteFile(filepath.Join(root, key, "note"), []byte("on the disk"), 0o644); err != nil {
		t.Errorf("writing on the disk made ahead: %v", err)
	}
	again := poolInodes(t, root)
	for ino := range again {
		if ahead[ino] && ino == info.Sys().(*syscall.Stat_t).Ino {
			t.Error("the image taken is still in the pool")
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// The quota doubled: the next runner's pool holds images of the new
	// size only.
	openDisks(t, root, 2*testQuota)
	poolInodes(t, root)
	names, _ := filepath.Glob(filepath.Join(root, ".disks", poolDir, "*.img"))
	for _, n := range names {
		if info, err := os.Stat(n); err != nil || info.Size() != 2*testQuota {
			t.Errorf("%s made ahead: %v, %v; want %d bytes", n, info.Size(), err, 2*testQuota)
		}
	}
}
