package disk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// staleDir, at the root of a disk beside its bound directories, holds
// the copies SetAside set aside: out of every run's sight (a run sees
// the bound directories only), and counted in the person's quota.
const staleDir = "stale"

// SetAside moves path out of every run's sight, to stale/<set>/<name> at
// the root of the disk, and returns where it went. path is one of the
// disk's binds' targets, or a directory right under one (a named
// project: <projects>/<name>); set and name are single path elements. A
// bind's target is a link to the disk's directory, which stays (runs
// bind it): what it holds moves instead (all of it or, on a failure,
// none), and the disk is marked Fresh again, so that what the target
// holds is restored before it is taken for the person's. The moves go
// through the disk's own mount, never through the link.
//
// The disk keeps one set: those set aside before, other than set, are
// removed first. Setting aside takes no room (renames), but for a
// directory or two, which root makes even on a disk its person filled
// (ext4 keeps blocks in reserve); on a disk so full that not even these can be made,
// path's copy is removed rather than kept (to is ""), so that what comes
// in its place (a snapshot) has the room. A copy set aside still counts in the
// quota until the next set replaces it, or DropStale (the runner calls
// it when it finds the disk full: the person cannot see the copies, so
// they cannot delete them to make room).
func (k *Disk) SetAside(path, set, name string) (string, error) {
	if !single(set) || !single(name) {
		return "", fmt.Errorf("set aside %s as %q/%q: not single path elements", path, set, name)
	}
	from, whole, err := k.onDisk(path)
	if err != nil {
		return "", err
	}
	if err := k.dropSets(set); err != nil {
		return "", err
	}
	to := filepath.Join(k.dir, staleDir, set, name)
	if err := os.RemoveAll(to); err != nil { // set aside before, in the same second
		return "", err
	}
	err = os.MkdirAll(filepath.Dir(to), 0o700)
	if err == nil && whole {
		err = os.Mkdir(to, 0o700)
	}
	switch {
	case errors.Is(err, unix.ENOSPC):
		to = ""
		err = removeIn(from, whole)
	case err == nil && whole:
		err = moveAll(from, to)
	case err == nil:
		err = os.Rename(from, to)
	}
	if err == nil && whole {
		err = os.WriteFile(filepath.Join(k.dir, freshFile), nil, 0o600)
	}
	return to, err
}

// DropStale removes the copies SetAside set aside on the disk, freeing
// their room; dropped says there were some.
func (k *Disk) DropStale() (dropped bool, err error) {
	dir := filepath.Join(k.dir, staleDir)
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return true, os.RemoveAll(dir)
}

// onDisk is where path, one of k's binds' targets or right under one,
// is on the disk's own mount; whole says path is the target itself.
func (k *Disk) onDisk(path string) (from string, whole bool, err error) {
	for _, b := range k.binds {
		switch rel, err := filepath.Rel(b.Target, path); {
		case err != nil:
		case rel == ".":
			return filepath.Join(k.dir, b.Name), true, nil
		case single(rel):
			// One element: no directory a run could swap for a link on
			// the way (rename does not follow the last one).
			return filepath.Join(k.dir, b.Name, rel), false, nil
		}
	}
	return "", false, fmt.Errorf("set aside %s: not on disk %s", path, k.id)
}

// dropSets removes the sets set aside on k before, but keep.
func (k *Disk) dropSets(keep string) error {
	entries, err := os.ReadDir(filepath.Join(k.dir, staleDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() != keep {
			errs = append(errs, os.RemoveAll(filepath.Join(k.dir, staleDir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// moveAll moves what from holds into to, all of it or none: on a
// failure, what moved goes back.
func moveAll(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	for i, e := range entries {
		if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			var errs []error
			for _, m := range entries[:i] {
				errs = append(errs, os.Rename(filepath.Join(to, m.Name()), filepath.Join(from, m.Name())))
			}
			return errors.Join(append([]error{fmt.Errorf("set aside %s: %w", from, err)}, errs...)...)
		}
	}
	return nil
}

// removeIn removes from, or what it holds when whole (a bind's source,
// which stays).
func removeIn(from string, whole bool) error {
	if whole {
		return emptyDir(from)
	}
	return os.RemoveAll(from)
}

// single reports whether s is one path element, not . or ..
func single(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}
