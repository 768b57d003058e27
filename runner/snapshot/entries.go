package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// localPath: a clean relative path that stays beneath its directory.
func localPath(p string) bool {
	return filepath.IsLocal(p) && path.Clean(p) == p && !strings.Contains(p, "\x00")
}

// statEntry is the entry of p beneath root, named name in the archive;
// nil for what is not moved (a FIFO, a socket, a device).
func statEntry(root *os.Root, p, name string) (*entry, error) {
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, err
	}
	e := &entry{name: name, root: root, path: p, mode: fi.Mode(), mtime: fi.ModTime()}
	switch {
	case fi.Mode().IsRegular():
		e.size = fi.Size()
	case fi.Mode()&fs.ModeSymlink != 0:
		if e.link, err = root.Readlink(p); err != nil {
			return nil, err
		}
	case fi.IsDir():
	default:
		return nil, nil
	}
	return e, nil
}

// walk lists everything beneath dir in root, dir included unless
// it is ".", named prefix + its path; links are not followed.
func walk(root *os.Root, dir, prefix string) ([]*entry, error) {
	var es []*entry
	err := fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone since it was listed
			}
			return err
		}
		if p == "." {
			return nil
		}
		e, err := statEntry(root, p, prefix+p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e != nil {
			es = append(es, e)
		}
		return nil
	})
	return es, err
}
