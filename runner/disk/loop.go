package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// loopControl is the kernel's loop device allocator.
const loopControl = "/dev/loop-control"

// loopMajor is the block major number of loop devices.
const loopMajor = 7

// mountLoop attaches image to a free loop device and mounts its ext4
// filesystem on dir (nosuid, nodev; discard, so that deleted files give
// the host its space back). The device has autoclear: unmounting dir
// releases it.
func mountLoop(image, dir string) error {
	f, err := os.OpenFile(image, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	dev, err := attach(f)
	if err != nil {
		return err
	}
	defer dev.Close() // the mount holds the device from here on
	if err := mountDevice(dev.Name(), dir); err != nil {
		return fmt.Errorf("mount %s (%s) on %s: %w", dev.Name(), image, dir, err)
	}
	return nil
}

// mountDevice mounts the ext4 filesystem of the loop device dev on dir
// (nosuid, nodev; discard, so that deleted files give the host its space
// back). A device whose filesystem is mounted elsewhere already is the
// same filesystem mounted once more.
func mountDevice(dev, dir string) error {
	return unix.Mount(dev, dir, "ext4", unix.MS_NOSUID|unix.MS_NODEV, "discard")
}

// attach attaches the open image to a free loop device, returned open:
// closing it without a mount releases the device (autoclear). Another
// process taking the same free device first is met by asking again.
func attach(image *os.File) (*os.File, error) {
	ctl, err := os.OpenFile(loopControl, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer ctl.Close()
	for range 16 {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return nil, fmt.Errorf("LOOP_CTL_GET_FREE: %w", err)
		}
		dev, err := openLoop(n)
		if err != nil {
			return nil, err
		}
		cfg := unix.LoopConfig{Fd: uint32(image.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		copy(cfg.Info.File_name[:], filepath.Base(image.Name()))
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		if err == nil {
			return dev, nil
		}
		dev.Close()
		if !errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("LOOP_CONFIGURE %s: %w", dev.Name(), err)
		}
	}
	return nil, fmt.Errorf("no free loop device: %w", unix.EBUSY)
}

// openLoop opens /dev/loop<n>, making its node first where /dev lacks it
// (a container's /dev is not devtmpfs: the devices the kernel adds do not
// appear in it).
func openLoop(n int) (*os.File, error) {
	name := "/dev/loop" + strconv.Itoa(n)
	if _, err := os.Stat(name); errors.Is(err, os.ErrNotExist) {
		if err := unix.Mknod(name, unix.S_IFBLK|0o600, int(unix.Mkdev(loopMajor, uint32(n)))); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("mknod %s: %w", name, err)
		}
	}
	return os.OpenFile(name, os.O_RDWR|unix.O_CLOEXEC, 0)
}

// loopOf is the loop device whose filesystem is mounted on dir.
func loopOf(dir string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return "", err
	}
	if unix.Major(st.Dev) != loopMajor {
		return "", fmt.Errorf("%s is not on a loop device (device %d:%d)", dir, unix.Major(st.Dev), unix.Minor(st.Dev))
	}
	return "/dev/loop" + strconv.Itoa(int(unix.Minor(st.Dev))), nil
}

// loopsBacking are the loop devices whose backing file is image (by
// /sys/block/loop*/loop/backing_file).
func loopsBacking(image string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var devs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil || strings.TrimSpace(string(b)) != image {
			continue
		}
		devs = append(devs, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(f))))
	}
	return devs
}

// releaseLoops releases the loop devices left on image and waits until
// none is: one left attached without a mount (by hand, or by an older
// runner without autoclear) goes at once; one whose filesystem is still
// mounted somewhere (a home being taken down still binds the disk, after
// its unmount was detached lazily) goes when that mount does. The image
// is never attached twice: two devices on one ext4 image would corrupt
// it.
func releaseLoops(ctx context.Context, image string) error {
	log := *zerolog.Ctx(ctx)
	ctx, cancel := context.WithTimeout(ctx, loopRelease)
	defer cancel()
	for said := false; ; {
		devs := loopsBacking(image)
		if len(devs) == 0 {
			return nil
		}
		if !said {
			for _, dev := range devs {
				// Released now, or (in use) once its last user closes it.
				if err := detach(dev); err != nil && !errors.Is(err, unix.EBUSY) {
					return fmt.Errorf("stale loop device on %s: %w", image, err)
				}
			}
			log.Warn().Strs("devices", devs).Msg("loop devices left on the disk: released before it is mounted again")
			said = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("loop devices %v still on %s (its filesystem is still mounted somewhere): %w", devs, image, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// loopRelease bounds how long a disk's loop devices are waited for.
const loopRelease = 10 * time.Second

// detach releases a loop device left attached to an image without a
// mount (made by hand, or by an older runner without autoclear).
func detach(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil {
		return fmt.Errorf("LOOP_CLR_FD %s: %w", dev, err)
	}
	return nil
}

// setCapacity tells the loop device dev that its backing file grew.
func setCapacity(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_CAPACITY, 0); err != nil {
		return fmt.Errorf("LOOP_SET_CAPACITY %s: %w", dev, err)
	}
	return nil
}

// mountRoot tells whether path is the root of a mount (statx's
// STATX_ATTR_MOUNT_ROOT, Linux 5.8), and its device.
func mountRoot(path string) (root bool, dev uint64, err error) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS, &stx); err != nil {
		return false, 0, err
	}
	if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 {
		return false, 0, fmt.Errorf("statx %s: the kernel does not tell mount roots (Linux 5.8 does)", path)
	}
	return stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, unix.Mkdev(stx.Dev_major, stx.Dev_minor), nil
}

// unmount unmounts dir; a mount still busy (a process working in it) is
// detached lazily, and gone once it is left.
func unmount(dir string) (lazy bool, err error) {
	err = unix.Unmount(dir, 0)
	if errors.Is(err, unix.EBUSY) {
		return true, unix.Unmount(dir, unix.MNT_DETACH)
	}
	return false, err
}
