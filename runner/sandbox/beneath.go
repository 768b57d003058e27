package sandbox

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// A person's workspace and home are the agent's to shape: any name in them
// may be a symlink to a file of textslash's, or a FIFO. textslash, which
// may run as root, touches them only through these, which resolve every
// name beneath its directory (os.Root: a link leading out of it is
// refused, as openat2's RESOLVE_BENEATH would), read regular files only,
// never wait on an open (O_NONBLOCK: a FIFO would block forever), and read
// at most a bound.

// ReadBeneath reads the regular file name beneath dir, at most max bytes
// (a longer file is an error).
func ReadBeneath(dir, name string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", name, errNotRegular)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", name, max)
	}
	return data, nil
}

// WriteBeneath writes data to name beneath dir (replacing a regular file,
// never following a link out of dir), made with perm and, when u is set,
// given to u.
func WriteBeneath(dir, name string, data []byte, perm fs.FileMode, u *User) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if fi, err := root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", name, errNotRegular)
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	if u != nil {
		if err := f.Chown(int(u.UID), int(u.GID)); err != nil {
			f.Close()
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// MkdirBeneath makes directory name beneath dir if it is not there, given
// to u when set; an existing name must be a directory beneath dir.
func MkdirBeneath(dir, name string, u *User) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(name, 0o755); err != nil {
		return err
	}
	d, err := root.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", name)
	}
	if u != nil {
		return d.Chown(int(u.UID), int(u.GID)) // the opened directory, not a name
	}
	return nil
}

// ReadDirBeneath lists directory name beneath dir.
func ReadDirBeneath(dir, name string) ([]fs.DirEntry, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	d, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadDir(-1)
}

// RemoveBeneath removes name beneath dir (a link itself, never what it
// points to).
func RemoveBeneath(dir, name string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.Remove(name)
}
