package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/textslash/textslash/runner/session"
)

// entry writes one archive entry beneath dir of root.
func (r *restorer) entry(root *os.Root, dir, rel string, hdr *tar.Header, tr io.Reader) error {
	rel = strings.TrimSuffix(rel, "/")
	if !localPath(rel) {
		return r.bad("entry %q leads outside", hdr.Name)
	}
	p := rel
	if dir != "" {
		p = dir + "/" + rel
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := r.mkdirs(root, p); err != nil {
			return err
		}
		r.dirModes = append(r.dirModes, pending{root: root, path: p, mode: fs.FileMode(hdr.Mode).Perm()})
		return nil
	case tar.TypeSymlink:
		// Last, so that no file is written through one.
		r.links = append(r.links, pending{root: root, path: p, target: hdr.Linkname})
		return nil
	case tar.TypeReg:
		return r.file(root, p, hdr, tr)
	}
	return r.bad("entry %q of type %q", hdr.Name, hdr.Typeflag)
}

// file writes a regular file at p beneath root (replacing what is there),
// owned as the workspace is.
func (r *restorer) file(root *os.Root, p string, hdr *tar.Header, tr io.Reader) error {
	if hdr.Typeflag != tar.TypeReg {
		return r.bad("entry %q is not a file", hdr.Name)
	}
	if r.limit -= hdr.Size; r.limit < 0 {
		return r.bad("larger than its limit")
	}
	if d := path.Dir(p); d != "." {
		if err := r.mkdirs(root, d); err != nil {
			return err
		}
	}
	if fi, err := root.Lstat(p); err == nil {
		rm := root.Remove
		if fi.IsDir() {
			rm = root.RemoveAll
		}
		if err := rm(p); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	err = r.chownFile(f)
	if err == nil {
		_, err = io.Copy(f, tr)
	}
	if err == nil {
		err = f.Chmod(fs.FileMode(hdr.Mode).Perm())
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	_ = root.Chtimes(p, hdr.ModTime, hdr.ModTime)
	return nil
}

func (r *restorer) chownFile(f *os.File) error {
	if r.uid == os.Geteuid() && r.gid == os.Getegid() {
		return nil
	}
	return f.Chown(r.uid, r.gid)
}

func (r *restorer) lchown(root *os.Root, p string) error {
	if r.uid == os.Geteuid() && r.gid == os.Getegid() {
		return nil
	}
	return root.Lchown(p, r.uid, r.gid)
}

// mkdirs makes directory p and its parents beneath root, giving what it
// makes to the owner; what is there must be a directory (through a link
// only if it stays beneath root).
func (r *restorer) mkdirs(root *os.Root, p string) error {
	parts := strings.Split(p, "/")
	for i := range parts {
		d := strings.Join(parts[:i+1], "/")
		switch err := root.Mkdir(d, 0o755); {
		case err == nil:
			if err := r.lchown(root, d); err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
			if fi, err := root.Stat(d); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrInvalid, d, err)
			} else if !fi.IsDir() {
				return r.bad("%s is not a directory", d)
			}
		default:
			return err
		}
	}
	return nil
}

// sessionFile writes the session id file in the home.
func (r *restorer) sessionFile(hdr *tar.Header, tr io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(tr, 257))
	if err != nil || len(b) > 256 || !session.Valid(strings.TrimSpace(string(b))) {
		return r.bad("session id")
	}
	if r.s.SessionFile == "" {
		return nil
	}
	if !localPath(r.s.SessionFile) {
		return fmt.Errorf("session file %q is not beneath the home", r.s.SessionFile)
	}
	h := *hdr
	h.Size, h.Mode = int64(len(b)), 0o600
	if err := r.file(r.home, r.s.SessionFile, &h, bytes.NewReader(b)); err != nil {
		return err
	}
	r.session = true
	return nil
}

// finish makes the links, deletes what was deleted, stages what was
// staged and gives directories their modes.
func (r *restorer) finish(ctx context.Context) error {
	for _, l := range r.links {
		if d := path.Dir(l.path); d != "." {
			if err := r.mkdirs(l.root, d); err != nil {
				return err
			}
		}
		if fi, err := l.root.Lstat(l.path); err == nil {
			if fi.IsDir() {
				return r.bad("link %s where there is a directory", l.path)
			}
			if err := l.root.Remove(l.path); err != nil {
				return err
			}
		}
		if err := l.root.Symlink(l.target, l.path); err != nil {
			return err
		}
		if err := r.lchown(l.root, l.path); err != nil {
			return err
		}
	}
	for _, p := range r.meta.Deleted {
		if !localPath(p) {
			return r.bad("deleted file %q leads outside", p)
		}
		if fi, err := r.dir.Lstat(p); err == nil && !fi.IsDir() {
			if err := r.dir.Remove(p); err != nil {
				return err
			}
		}
	}
	if r.meta.Git && len(r.meta.Staged) > 0 {
		var list []byte
		for _, p := range r.meta.Staged {
			if !localPath(p) {
				return r.bad("staged file %q leads outside", p)
			}
			list = append(append(list, p...), 0)
		}
		if _, err := runGit(ctx, r.s, list, "--literal-pathspecs", "add", "-A", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return err
		}
	}
	for _, d := range slices.Backward(r.dirModes) {
		if err := d.root.Chmod(d.path, d.mode|0o700); err != nil { // the owner keeps its way in
			return err
		}
	}
	return nil
}
