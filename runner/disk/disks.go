package disk

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// MinQuota is the smallest quota: ext4's own needs (its journal, its
// tables) take a few megabytes of each disk.
const MinQuota = 32 << 20

// Files at the root of a disk: readyFile says what was there before the
// disk has been moved in; freshFile that nothing was, or that SetAside
// emptied the workspace, and nothing has been put on it since (Fresh,
// Used). The copies set aside are under staleDir (aside.go).
const (
	readyFile = ".ready"
	freshFile = ".fresh"
)

// Bind is one of a person's directories held on their disk: Name is its
// directory on the disk, Target the place the runner uses it at (made a
// link to the disk's directory: links.go).
type Bind struct{ Name, Target string }

// Disks are the people's disks on a runner.
type Disks struct {
	dir   string // the images, their mount points and people/
	quota int64
	log   zerolog.Logger

	mu    sync.Mutex
	disks map[string]*Disk       // by person key: mounted, by this process or found so
	locks map[string]*sync.Mutex // by person key: one Mount at a time
	// tooFull are the people whose files did not fit on their disk.
	tooFull map[string]bool
	pool    *pool // images made ahead
}

// Disk is one person's disk, mounted.
type Disk struct {
	id    string
	image string
	dir   string // where the image is mounted
	size  int64  // the image's size: the quota, or more when the quota shrank
	binds []Bind
	// users are the runs in the disk now (Mount to Leave), last when the
	// last one left; guarded by Disks.mu.
	users int
	last  time.Time
}

// Open readies people's disks of quota bytes each, kept in dir, after
// checking that this machine can make one: a disk made, mounted and
// unmounted. ErrUnsupported says why not.
func Open(ctx context.Context, dir string, quota int64) (*Disks, error) {
	log := *zerolog.Ctx(ctx)
	if quota < MinQuota {
		return nil, fmt.Errorf("quota %d: at least %d bytes", quota, MinQuota)
	}
	for _, p := range []string{"mkfs.ext4", "e2fsck", "resize2fs", "cp"} {
		if _, err := exec.LookPath(p); err != nil {
			return nil, fmt.Errorf("%w: %s not installed (Debian: e2fsprogs)", ErrUnsupported, p)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "people"), 0o700); err != nil {
		return nil, err
	}
	// Passed, not listed, by others: a run's sandbox (bubblewrap, as the
	// agent user) binds its person's directories from their disk.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	if err := probe(ctx, dir); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if err := sweepBinds(dir, log); err != nil {
		return nil, fmt.Errorf("binds of an older runner: %w", err)
	}
	d := &Disks{dir: dir, quota: quota, log: log, disks: map[string]*Disk{}, locks: map[string]*sync.Mutex{}, tooFull: map[string]bool{}}
	if err := d.openPool(); err != nil {
		return nil, fmt.Errorf("disk images made ahead: %w", err)
	}
	return d, nil
}

// probe makes, mounts and unmounts a disk of MinQuota in dir.
func probe(ctx context.Context, dir string) error {
	image, mnt := filepath.Join(dir, "probe.img"), filepath.Join(dir, "probe")
	if root, _, err := mountRoot(mnt); err == nil && root {
		_, _ = unmount(mnt) // a probe of a runner killed as it probed
	}
	os.Remove(image)
	defer os.Remove(image)
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		return err
	}
	defer os.Remove(mnt)
	if err := makeImage(ctx, image, MinQuota); err != nil {
		return err
	}
	if err := mountLoop(image, mnt); err != nil {
		return err
	}
	if root, _, err := mountRoot(mnt); err != nil || !root {
		_, _ = unmount(mnt)
		return fmt.Errorf("probe not seen mounted: %v", err)
	}
	_, err := unmount(mnt)
	return err
}

// Quota is the bound of each disk, in bytes.
func (d *Disks) Quota() int64 { return d.quota }

// Mount readies the disk of the person key: made the first time (what
// binds' targets held moved in), mounted unless it is already (a runner
// killed left it so), grown when the quota grew, and the binds' targets
// made links to its directories. Mounting a disk already mounted by this
// process only checks its links. ErrTooFull: what the person had does not
// fit; it is left where it was, on the host's disk.
func (d *Disks) Mount(ctx context.Context, key string, binds []Bind) (*Disk, error) {
	if key == "" || strings.ContainsAny(key, "/\x00") || strings.HasPrefix(key, ".") {
		return nil, fmt.Errorf("disk of %q: not a person's key", key)
	}
	lock := d.lockOf(key)
	lock.Lock()
	defer lock.Unlock()
	d.mu.Lock()
	k, tooFull := d.disks[key], d.tooFull[key]
	d.mu.Unlock()
	if tooFull {
		// Not copied again at each job: a start of the runner tries again.
		return nil, fmt.Errorf("%w (found before; tried again when the runner starts again)", ErrTooFull)
	}
	if k == nil {
		var err error
		k, err = d.mountImage(ctx, key)
		if k != nil && k.dir != "" {
			if root, _, _ := mountRoot(k.dir); root {
				d.mu.Lock()
				d.disks[key] = k // Close unmounts it, whatever comes next
				d.mu.Unlock()
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if err := k.bind(d.log.WithContext(ctx), binds); err != nil {
		if errors.Is(err, ErrTooFull) {
			d.mu.Lock()
			d.tooFull[key] = true
			d.mu.Unlock()
		}
		return nil, err
	}
	d.mu.Lock()
	k.users++
	d.mu.Unlock()
	return k, nil
}

// Leave ends a run's use of k, mounted for it by Mount.
func (d *Disks) Leave(k *Disk) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k.users--
	k.last = time.Now()
}

// Sweep unmounts the disks no run is in and held does not claim (their
// person's home, which binds their directories, is still there): those
// unused for longer than idle, and past max mounted disks the least
// recently used. A runner that served many people so keeps a mounted
// disk (a loop device, ext4's journal thread) for those of late only; the
// next Mount of a disk let go mounts it again. held is called without
// Disks' lock held.
func (d *Disks) Sweep(idle time.Duration, max int, held func(key string) bool) {
	type disk struct {
		key  string
		k    *Disk
		last time.Time
	}
	d.mu.Lock()
	var unused []disk
	for key, k := range d.disks {
		if k.users == 0 {
			unused = append(unused, disk{key, k, k.last})
		}
	}
	mounted := len(d.disks)
	d.mu.Unlock()
	unused = slices.DeleteFunc(unused, func(u disk) bool { return held(u.key) })
	slices.SortFunc(unused, func(a, b disk) int { return a.last.Compare(b.last) })
	for i, u := range unused {
		if i < mounted-max || time.Since(u.last) > idle {
			d.letGo(u.key, u.k)
		}
	}
}

// letGo unmounts key's disk k, unless a run came to it meanwhile.
func (d *Disks) letGo(key string, k *Disk) {
	lock := d.lockOf(key)
	lock.Lock()
	defer lock.Unlock()
	d.mu.Lock()
	if d.disks[key] != k || k.users > 0 {
		d.mu.Unlock()
		return
	}
	delete(d.disks, key)
	d.mu.Unlock()
	if err := d.unmount(k); err != nil {
		d.log.Error().Err(err).Str("disk", k.id).Msg("disk not unmounted as it was let go")
		return
	}
	d.log.Info().Str("disk", k.id).Msg("disk let go: unmounted")
}

// lockOf is the person key's lock.
func (d *Disks) lockOf(key string) *sync.Mutex {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.locks[key]
	if l == nil {
		l = &sync.Mutex{}
		d.locks[key] = l
	}
	return l
}

// mountImage mounts key's image, made first when it has none, and grows
// it to the quota.
func (d *Disks) mountImage(ctx context.Context, key string) (*Disk, error) {
	id, err := d.idOf(key)
	if err != nil {
		return nil, err
	}
	k := &Disk{id: id, image: filepath.Join(d.dir, id+".img"), dir: filepath.Join(d.dir, id)}
	log := d.log.With().Str("disk", id).Str("image", k.image).Logger()
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return nil, err
	}
	start := time.Now()
	mounted, _, err := mountRoot(k.dir)
	switch {
	case err != nil:
		return nil, err
	case mounted:
		log.Info().Msg("disk found mounted (left by a runner before this one); used as it is")
	default:
		if err := d.attachImage(log.WithContext(ctx), k); err != nil {
			return nil, err
		}
		log.Info().Dur("took_ms", time.Since(start)).Msg("disk mounted")
	}
	info, err := os.Stat(k.image)
	if err != nil {
		return k, err
	}
	k.size = info.Size()
	if mounted && d.quota > k.size {
		// Online growth needs CAP_SYS_RESOURCE, which a container (and
		// this machine's root) may lack; else it grows when next mounted.
		if err := grow(ctx, k.image, k.dir, d.quota); err != nil {
			log.Warn().Err(err).Int64("size", k.size).Int64("quota", d.quota).Msg("the quota grew, the disk not yet: it grows when next mounted (after a clean stop)")
		} else {
			k.size = d.quota
		}
	}
	return k, nil
}

// attachImage mounts k's image on k.dir: made first when there is none,
// grown when the quota grew (the filesystem checked and resized while
// unmounted: growing it mounted needs CAP_SYS_RESOURCE). A loop device
// still on the image is mounted as it is: a sandbox made while the disk
// was mounted still holds it (every sandbox sees the host's mounts of its
// time, hidden), so the filesystem is alive, and a second device on the
// image would corrupt it. One that cannot be mounted is released first.
func (d *Disks) attachImage(ctx context.Context, k *Disk) error {
	log := *zerolog.Ctx(ctx)
	for _, dev := range loopsBacking(k.image) {
		if err := mountDevice(dev, k.dir); err == nil {
			log.Info().Str("device", dev).Msg("disk mounted again from its loop device, still held by a sandbox")
			return nil
		}
	}
	if err := releaseLoops(ctx, k.image); err != nil {
		return err
	}
	info, err := os.Stat(k.image)
	switch {
	case errors.Is(err, os.ErrNotExist):
		ahead := d.pool.take(d, k.image)
		if !ahead {
			if err := makeImage(ctx, k.image, d.quota); err != nil {
				return err
			}
		}
		log.Info().Int64("quota", d.quota).Bool("made_ahead", ahead).Msg("disk made")
	case err != nil:
		return err
	case d.quota > info.Size():
		if err := growOffline(ctx, k.image, d.quota); err != nil {
			log.Error().Err(err).Int64("size", info.Size()).Int64("quota", d.quota).Msg("disk not grown to the quota; it keeps its size")
		} else {
			log.Info().Int64("from", info.Size()).Int64("to", d.quota).Msg("disk grown to the quota")
		}
	case d.quota < info.Size():
		log.Warn().Int64("size", info.Size()).Int64("quota", d.quota).Msg("the quota is below this disk's size: disks are not shrunk, it keeps its size")
	}
	return mountLoop(k.image, k.dir)
}

// idOf is the opaque id of key's disk, made the first time.
func (d *Disks) idOf(key string) (string, error) {
	name := filepath.Join(d.dir, "people", key)
	if b, err := os.ReadFile(name); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			return id, nil
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if err := os.WriteFile(name+".new", []byte(id+"\n"), 0o600); err != nil {
		return "", err
	}
	return id, os.Rename(name+".new", name)
}

// moveIn moves what binds' targets hold onto the new disk, all or none:
// everything copied first, then removed from the targets (left empty, or
// missing, for bind to link). It marks the disk ready, and Fresh when
// there was nothing.
func (k *Disk) moveIn(ctx context.Context, binds []Bind) error {
	empty := true
	for i, b := range binds {
		copied, err := copyIn(ctx, b.Target, filepath.Join(k.dir, b.Name))
		empty = empty && !copied
		if err != nil {
			var errs []error
			for _, c := range binds[:i+1] {
				errs = append(errs, emptyDir(filepath.Join(k.dir, c.Name)))
			}
			return fmt.Errorf("move %s onto disk %s: %w", b.Target, k.id, errors.Join(append([]error{err}, errs...)...))
		}
	}
	for _, b := range binds {
		if err := emptyDir(b.Target); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if empty {
		if err := os.WriteFile(filepath.Join(k.dir, freshFile), nil, 0o600); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(k.dir, readyFile), nil, 0o600)
}

// Fresh tells whether what the disk's directories hold is not yet the
// person's, and not marked Used since: the disk was made empty, nothing
// of the person's moved onto it, or SetAside emptied a bind's target (a
// runner restoring their snapshot looks at it).
func (k *Disk) Fresh() bool {
	_, err := os.Stat(filepath.Join(k.dir, freshFile))
	return err == nil
}

// Used marks the disk as no longer Fresh.
func (k *Disk) Used() error {
	err := os.Remove(filepath.Join(k.dir, freshFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Usage is what the disk holds (its size less what is free: ext4's own
// share counts as used) and its size, in bytes; full when less than 1%
// (at least 1 MiB) is left.
func (k *Disk) Usage() (used, size int64, full bool, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(k.dir, &st); err != nil {
		return 0, k.size, false, err
	}
	free := int64(st.Bavail) * st.Bsize
	return max(k.size-free, 0), k.size, free < max(k.size/100, 1<<20), nil
}

// Close unmounts every disk this process mounted or found mounted. A
// mount still in use is detached lazily (gone once left). The links to
// the disks stay, for the next runner to mount them again.
func (d *Disks) Close() error {
	d.pool.close()
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for key, k := range d.disks {
		errs = append(errs, d.unmount(k))
		delete(d.disks, key)
		d.log.Info().Str("disk", k.id).Msg("disk unmounted")
	}
	return errors.Join(errs...)
}

// unmount unmounts k. A mount still in use (a home being taken down still
// binds its directories) is detached lazily: gone once left, and its loop
// device released then (attachImage waits for that before it mounts the
// image again).
func (d *Disks) unmount(k *Disk) error {
	lazy, err := unmount(k.dir)
	if lazy {
		d.log.Warn().Str("disk", k.id).Msg("disk busy at unmount: detached, released once left")
	}
	if err != nil && !errors.Is(err, unix.EINVAL) { // EINVAL: not mounted
		return fmt.Errorf("unmount %s: %w", k.dir, err)
	}
	return nil
}
