package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// toolTimeout bounds each e2fsprogs or cp run.
const toolTimeout = 10 * time.Minute

// makeImage makes image, a sparse file of size bytes holding an empty
// ext4 filesystem: made under another name and renamed, so that an image
// by its name is always whole. No blocks are reserved for root (the
// agents are not root), and the journal is not written out: the file's
// holes read as zeros, so a new image takes a few megabytes of the host.
func makeImage(ctx context.Context, image string, size int64) error {
	tmp := image + ".new"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = tool(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-L", "textslash", "-E", "lazy_journal_init=1", tmp)
	}
	if err == nil {
		err = os.Rename(tmp, image)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("make %s: %w", image, err)
	}
	return nil
}

// grow makes the image mounted on dir size bytes, its filesystem too,
// while mounted (ext4 grows online, given CAP_SYS_RESOURCE).
func grow(ctx context.Context, image, dir string, size int64) error {
	dev, err := loopOf(dir)
	if err != nil {
		return err
	}
	was, err := os.Stat(image)
	if err != nil {
		return err
	}
	if err := os.Truncate(image, size); err != nil {
		return err
	}
	err = setCapacity(dev)
	if err == nil {
		err = tool(ctx, "resize2fs", dev)
	}
	if err != nil {
		// Back to the filesystem's size, so that the next mount grows it.
		return errors.Join(err, os.Truncate(image, was.Size()), setCapacity(dev))
	}
	return nil
}

// growOffline makes the unmounted image size bytes, its filesystem
// too (checked first, as resize2fs requires).
func growOffline(ctx context.Context, image string, size int64) error {
	if err := tool(ctx, "e2fsck", "-f", "-p", image); err != nil {
		return err
	}
	was, err := os.Stat(image)
	if err != nil {
		return err
	}
	if err := os.Truncate(image, size); err != nil {
		return err
	}
	if err := tool(ctx, "resize2fs", image); err != nil {
		return errors.Join(err, os.Truncate(image, was.Size()))
	}
	return nil
}

// tool runs an e2fsprogs (or coreutils) program; its error carries the
// program's last words.
func tool(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		text := strings.TrimSpace(string(out))
		if len(text) > 300 {
			text = text[len(text)-300:]
		}
		return fmt.Errorf("%s: %w: %s", name, err, text)
	}
	return nil
}

// copyIn copies what from holds into to, on the disk, with everything
// (owners, modes, links, times); copied says there was something. A copy
// that does not fit is ErrTooFull.
func copyIn(ctx context.Context, from, to string) (copied bool, err error) {
	entries, err := os.ReadDir(from)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := tool(ctx, "cp", "-a", "--", from+"/.", to+"/"); err != nil {
		if strings.Contains(err.Error(), "No space left") {
			return true, fmt.Errorf("%w: %s", ErrTooFull, from)
		}
		return true, err
	}
	return true, nil
}

// emptyDir removes what dir holds, leaving dir.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}
