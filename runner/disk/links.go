package disk

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// A person's directories lead to their disk by links, not mounts: every
// sandbox is made from the runner's mount namespace, and copies its mount
// table whole (bubblewrap's --ro-bind / / is recursive; hiding a directory
// hides what it holds, not the mount entries under it), so a mount at
// <workspaces>/<key> would name the person in everyone's
// /proc/self/mountinfo. The host's mount table holds only the disks, at
// <id>/ under Open's directory; a bind's target is a relative link to the
// disk's directory, which the runner's own file operations follow, and a
// sandbox binds the directory the link leads to onto the person's path
// inside itself alone (bubblewrap follows a bind's source from the host's
// root, where a relative link leads where it does on the host; an
// absolute one would be read against the sandbox's root).

// besideDir, under Open's directory, keeps what a bind's target held
// beside a disk made before (files an older runner left hidden under its
// bind): out of every run's sight, on the host's disk.
const besideDir = "beside"

// bind links binds' targets to the disk's directories, after moving what
// they held onto the disk the first time; links already there are left.
func (k *Disk) bind(ctx context.Context, binds []Bind) error {
	log := *zerolog.Ctx(ctx)
	var todo []Bind // not linked yet
	for _, b := range binds {
		if err := os.MkdirAll(filepath.Join(k.dir, b.Name), 0o755); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(b.Target), 0o755); err != nil {
			return err
		}
		linked, err := k.linked(b, log)
		switch {
		case err != nil:
			return err
		case linked:
			k.note(b)
		default:
			todo = append(todo, b)
		}
	}
	if _, err := os.Stat(filepath.Join(k.dir, readyFile)); errors.Is(err, os.ErrNotExist) {
		if err := k.moveIn(ctx, todo); err != nil {
			return err
		}
	} else if err := k.setBeside(todo, log); err != nil {
		return err
	}
	for _, b := range todo {
		if err := k.link(b); err != nil {
			return err
		}
		k.note(b)
	}
	return nil
}

// linkTo is what b's target links to: the disk's directory, relative to
// the target's own directory.
func (k *Disk) linkTo(b Bind) (string, error) {
	return filepath.Rel(filepath.Dir(b.Target), filepath.Join(k.dir, b.Name))
}

// linked reports whether b's target links to the disk already. A link
// elsewhere is removed; a directory is left for moveIn or setBeside.
func (k *Disk) linked(b Bind, log zerolog.Logger) (bool, error) {
	want, err := k.linkTo(b)
	if err != nil {
		return false, err
	}
	fi, err := os.Lstat(b.Target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case fi.Mode()&fs.ModeSymlink != 0:
		if to, err := os.Readlink(b.Target); err == nil && to == want {
			return true, nil
		}
		log.Warn().Str("dir", b.Target).Msg("link to another disk replaced")
		return false, os.Remove(b.Target)
	case !fi.IsDir():
		return false, fmt.Errorf("%s is not a directory", b.Target)
	}
	// (An older runner's binds are gone since Open: sweepBinds.)
	switch bound, dev, err := mountRoot(b.Target); {
	case err != nil:
		return false, err
	case bound:
		return false, fmt.Errorf("%s is another mount already (device %d:%d)", b.Target, unix.Major(dev), unix.Minor(dev))
	}
	return false, nil
}

// link makes b's target, empty or missing, a link to the disk's
// directory.
func (k *Disk) link(b Bind) error {
	to, err := k.linkTo(b)
	if err != nil {
		return err
	}
	if err := os.Remove(b.Target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("link %s to disk %s: %w", b.Target, k.id, err)
	}
	return os.Symlink(to, b.Target)
}

// setBeside moves what binds' targets hold, on a disk that is the
// person's already, to besideDir: files an older runner's bind hid, or
// written while the disk was not mounted. The disk's are the person's.
func (k *Disk) setBeside(binds []Bind, log zerolog.Logger) error {
	for _, b := range binds {
		entries, err := os.ReadDir(b.Target)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0) {
			continue
		}
		if err != nil {
			return err
		}
		dir := filepath.Join(filepath.Dir(k.dir), besideDir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		to := filepath.Join(dir, k.id+"."+b.Name+"."+strconv.FormatInt(time.Now().UnixNano(), 36))
		if err := os.Rename(b.Target, to); err != nil {
			return fmt.Errorf("set aside what %s holds beside disk %s: %w", b.Target, k.id, err)
		}
		log.Warn().Str("dir", b.Target).Str("to", to).Int("entries", len(entries)).Msg("files beside the disk, not on it, set aside: the directory links to the disk")
	}
	return nil
}

// note notes b linked, for SetAside.
func (k *Disk) note(b Bind) {
	if !slices.Contains(k.binds, b) {
		k.binds = append(k.binds, b)
	}
}

// sweepBinds unmounts what older runners bound of the disks kept in dir
// (the loop devices backing its images) anywhere but at their own mount
// points right under dir: a runner killed leaves its mounts, and an
// older one bound each person's disk onto their directories, at their
// names, which every sandbox's mount table would list.
func sweepBinds(dir string, log zerolog.Logger) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mount-point …
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || !strings.HasPrefix(fields[2], strconv.Itoa(loopMajor)+":") {
			continue
		}
		backing, err := os.ReadFile("/sys/dev/block/" + fields[2] + "/loop/backing_file")
		if err != nil || filepath.Dir(strings.TrimSpace(string(backing))) != dir {
			continue
		}
		if p := unescape(fields[4]); filepath.Dir(p) != dir {
			points = append(points, p)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	var errs []error
	for _, p := range slices.Backward(points) { // the last mounted first
		if err := unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			continue
		}
		log.Info().Str("dir", p).Msg("bind of a disk left by an older runner unmounted")
	}
	return errors.Join(errs...)
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
