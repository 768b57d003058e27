package runner

import (
	"archive/tar"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/session"
)

// restoreSnapshot rebuilds the workspace s.Dir, which must be empty or
// missing, from the snapshot obs holds under name, and the agent's
// sessions of it in s.Home under the workspace's new name; found is false
// when there is none. The notes tell the person what moved and what did
// not. The object is read whole and checked before anything is written;
// a restore that fails leaves the workspace empty.
func restoreSnapshot(ctx context.Context, obs jetstream.ObjectStore, name string, s snapshotSource) (found bool, notes []string, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, snapshotTimeout)
		defer cancel()
	}
	obj, err := obs.Get(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("snapshot %s: %w", name, err)
	}
	spool, err := os.CreateTemp("", "textslash-snapshot-*")
	if err != nil {
		obj.Close()
		return true, nil, fmt.Errorf("snapshot %s: %w", name, err)
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	_, err = io.Copy(spool, obj) // checks the digest at the end
	obj.Close()
	if err == nil {
		_, err = spool.Seek(0, io.SeekStart)
	}
	if err != nil {
		return true, nil, fmt.Errorf("snapshot %s: %w", name, err)
	}

	uid, gid, err := snapRestoreTarget(s)
	if err != nil {
		return true, nil, err
	}
	r := &snapRestorer{ctx: ctx, s: s, uid: uid, gid: gid}
	if r.dir, err = os.OpenRoot(s.Dir); err != nil {
		return true, nil, err
	}
	defer r.dir.Close()
	if r.home, err = os.OpenRoot(s.Home); err != nil {
		return true, nil, err
	}
	defer r.home.Close()
	if err := r.restore(spool); err != nil {
		// Empty again, for the next try: all of it is the restore's.
		if names, rerr := os.ReadDir(s.Dir); rerr == nil {
			for _, n := range names {
				_ = r.dir.RemoveAll(n.Name())
			}
		}
		return true, nil, fmt.Errorf("restore snapshot %s: %w", name, err)
	}
	return true, r.notes, nil
}

// restoreTarget checks that s.Dir is empty or missing, makes it and the
// home when missing, and returns who is to own what the restore makes.
func snapRestoreTarget(s snapshotSource) (uid, gid int, err error) {
	owner := func(p string) bool {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		st := fi.Sys().(*syscall.Stat_t)
		uid, gid = int(st.Uid), int(st.Gid)
		return true
	}
	switch fi, err := os.Lstat(s.Dir); {
	case err == nil:
		if !fi.IsDir() {
			return 0, 0, fmt.Errorf("%w: %s is not a directory", errSnapshotNotEmpty, s.Dir)
		}
		if names, err := os.ReadDir(s.Dir); err != nil {
			return 0, 0, err
		} else if len(names) > 0 {
			return 0, 0, fmt.Errorf("%w: %s", errSnapshotNotEmpty, s.Dir)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return 0, 0, err
	}
	switch {
	case s.Owner != nil:
		uid, gid = int(s.Owner.UID), int(s.Owner.GID)
	case owner(s.Dir), owner(s.Home), owner(filepath.Dir(s.Dir)):
	default:
		uid, gid = os.Geteuid(), os.Getegid()
	}
	for _, d := range []string{s.Dir, s.Home} {
		if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
			return 0, 0, err
		}
		if err := os.Mkdir(d, 0o750); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			return 0, 0, err
		}
		if err := snapLchown(d, uid, gid); err != nil {
			return 0, 0, err
		}
	}
	return uid, gid, nil
}

func snapLchown(p string, uid, gid int) error {
	if uid == os.Geteuid() && gid == os.Getegid() {
		return nil
	}
	return os.Lchown(p, uid, gid)
}

// snapRestorer is one restore under way.
type snapRestorer struct {
	ctx       context.Context
	s         snapshotSource
	dir, home *os.Root
	uid, gid  int
	meta      snapshotMeta
	limit     int64 // bytes the archive's files may hold
	links     []snapLink
	dirModes  []snapLink
	late      []snapshotLeftOut
	notes     []string
	session   bool
	refetched string // the remote the history was fetched again from
	unpushed  string // the note on commits not found there
}

type snapLink struct {
	root   *os.Root
	path   string
	target string
	mode   fs.FileMode
}

func (r *snapRestorer) bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errSnapshotBad, fmt.Sprintf(format, args...))
}

func (r *snapRestorer) restore(spool io.Reader) error {
	gz, err := gzip.NewReader(spool)
	if err != nil {
		return r.bad("%v", err)
	}
	tr := tar.NewReader(gz)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != snapMeta || hdr.Size > 64<<20 {
		return r.bad("no %s first", snapMeta)
	}
	if err := json.NewDecoder(io.LimitReader(tr, hdr.Size)).Decode(&r.meta); err != nil {
		return r.bad("%s: %v", snapMeta, err)
	}
	if r.meta.V != snapshotVersion {
		return fmt.Errorf("%w: version %d, this runner reads %d", errSnapshotBad, r.meta.V, snapshotVersion)
	}
	r.limit = max(r.s.max(), min(r.meta.Max, contract.SnapshotsMaxBytes)) + 1<<20
	hdr, err = tr.Next()
	var bundle string
	if err == nil && hdr.Name == snapBundle {
		tmp := ".textslash-restore-" + sandbox.NewMark() + ".bundle"
		defer r.home.Remove(tmp)
		if err := r.file(r.home, tmp, hdr, tr); err != nil {
			return err
		}
		bundle = filepath.Join(r.s.Home, tmp)
		hdr, err = tr.Next()
	}
	if r.meta.Git {
		if err := r.git(bundle); err != nil {
			return err
		}
	}
	transcripts := snapTranscriptsOf(r.s.Dir)
	var files, sessions int
	var fileBytes int64
	for ; err == nil; hdr, err = tr.Next() {
		switch name := hdr.Name; {
		case strings.HasPrefix(name, snapFiles):
			if err := r.entry(r.dir, "", strings.TrimPrefix(name, snapFiles), hdr, tr); err != nil {
				return err
			}
			if hdr.Typeflag == tar.TypeReg {
				files++
				fileBytes += hdr.Size
			}
		case strings.HasPrefix(name, snapClaude):
			if err := r.entry(r.home, transcripts, strings.TrimPrefix(name, snapClaude), hdr, tr); err != nil {
				return err
			}
			if hdr.Typeflag == tar.TypeReg {
				sessions++
			}
		case name == snapSession:
			if err := r.sessionFile(hdr, tr); err != nil {
				return err
			}
		case name == snapLate:
			if err := json.NewDecoder(io.LimitReader(tr, 16<<20)).Decode(&r.late); err != nil {
				return r.bad("%s: %v", snapLate, err)
			}
		default:
			return r.bad("unexpected entry %q", name)
		}
	}
	if err != io.EOF {
		return r.bad("%v", err)
	}
	if err := r.finish(); err != nil {
		return err
	}
	r.say(files, fileBytes, sessions)
	return nil
}

// git makes the repository: from the bundle, or fetched again from the
// project's remote, or new when there was no commit.
func (r *snapRestorer) git(bundle string) error {
	m := r.meta
	git := func(args ...string) (string, error) { return snapGit(r.ctx, r.s, nil, args...) }
	if m.Head != "" && !snapCommitRE.MatchString(m.Head) {
		return r.bad("HEAD %q", m.Head)
	}
	url := cmp.Or(r.s.URL, m.URL)
	origin := cmp.Or(m.Origin, url)
	refetch := bundle == "" && m.Head != "" && url != ""
	if refetch {
		origin = url // the remote-tracking branches come from there
	}
	init := []string{"init", "-q"}
	if m.Branch != "" {
		init = append(init, "--initial-branch="+m.Branch)
	}
	if _, err := git(init...); err != nil {
		return err
	}
	if origin != "" {
		if _, err := git("remote", "add", "--", "origin", origin); err != nil {
			return err
		}
	}
	target := m.Head
	switch {
	case bundle != "":
		if _, err := git("fetch", "-q", "--update-head-ok", "--", bundle, "refs/*:refs/*"); err != nil {
			return err
		}
	case refetch:
		if _, err := git("fetch", "-q", "--tags", "origin"); err != nil {
			return fmt.Errorf("fetch %s again: %w", contract.RedactURL(url), err)
		}
		r.refetched = contract.RedactURL(url)
		_, _ = git("remote", "set-head", "origin", "--auto")
		if _, err := git("cat-file", "-e", m.Head+"^{commit}"); err == nil {
			break // every commit is there
		}
		branchAt := ""
		if m.Branch != "" {
			if h, err := git("rev-parse", "-q", "--verify", "refs/remotes/origin/"+m.Branch+"^{commit}"); err == nil {
				target, branchAt = strings.TrimSpace(h), "it is at "+snapShort(strings.TrimSpace(h))+" as there"
			}
		}
		if branchAt == "" {
			h, err := git("rev-parse", "-q", "--verify", "refs/remotes/origin/HEAD^{commit}")
			if err != nil {
				return fmt.Errorf("nothing to check out from %s", contract.RedactURL(url))
			}
			target, branchAt = strings.TrimSpace(h), "it starts again from that repository's default branch"
		}
		r.unpushed = fmt.Sprintf("Commits not pushed to %s did not move: %s was at %s, %s.",
			contract.RedactURL(url), cmp.Or(m.Branch, "HEAD"), snapShort(m.Head), branchAt)
	default:
		target = "" // no history: a new repository, its branch unborn
	}
	if target != "" {
		ref := []string{"update-ref", "refs/heads/" + m.Branch, target}
		if m.Branch == "" {
			ref = []string{"update-ref", "--no-deref", "HEAD", target}
		}
		if _, err := git(ref...); err != nil {
			return err
		}
		if _, err := git("reset", "-q", "--hard"); err != nil {
			return err
		}
	}
	if m.Branch != "" && m.Upstream != "" && origin != "" {
		if _, err := git("config", "branch."+m.Branch+".remote", "origin"); err != nil {
			return err
		}
		if _, err := git("config", "branch."+m.Branch+".merge", m.Upstream); err != nil {
			return err
		}
	}
	return nil
}

var snapCommitRE = regexp.MustCompile(`^[0-9a-f]{40,64}$`)

func snapShort(h string) string { return h[:min(len(h), 8)] }

// entry writes one archive entry beneath dir of root.
func (r *snapRestorer) entry(root *os.Root, dir, rel string, hdr *tar.Header, tr io.Reader) error {
	rel = strings.TrimSuffix(rel, "/")
	if !snapLocalPath(rel) {
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
		r.dirModes = append(r.dirModes, snapLink{root: root, path: p, mode: fs.FileMode(hdr.Mode).Perm()})
		return nil
	case tar.TypeSymlink:
		// Last, so that no file is written through one.
		r.links = append(r.links, snapLink{root: root, path: p, target: hdr.Linkname})
		return nil
	case tar.TypeReg:
		return r.file(root, p, hdr, tr)
	}
	return r.bad("entry %q of type %q", hdr.Name, hdr.Typeflag)
}

// file writes a regular file at p beneath root (replacing what is there),
// owned as the workspace is.
func (r *snapRestorer) file(root *os.Root, p string, hdr *tar.Header, tr io.Reader) error {
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

func (r *snapRestorer) chownFile(f *os.File) error {
	if r.uid == os.Geteuid() && r.gid == os.Getegid() {
		return nil
	}
	return f.Chown(r.uid, r.gid)
}

func (r *snapRestorer) lchown(root *os.Root, p string) error {
	if r.uid == os.Geteuid() && r.gid == os.Getegid() {
		return nil
	}
	return root.Lchown(p, r.uid, r.gid)
}

// mkdirs makes directory p and its parents beneath root, giving what it
// makes to the owner; what is there must be a directory (through a link
// only if it stays beneath root).
func (r *snapRestorer) mkdirs(root *os.Root, p string) error {
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
				return fmt.Errorf("%w: %s: %v", errSnapshotBad, d, err)
			} else if !fi.IsDir() {
				return r.bad("%s is not a directory", d)
			}
		default:
			return err
		}
	}
	return nil
}

// session.File writes the session id file in the home.
func (r *snapRestorer) sessionFile(hdr *tar.Header, tr io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(tr, 257))
	if err != nil || len(b) > 256 || !session.Valid(strings.TrimSpace(string(b))) {
		return r.bad("session id")
	}
	if r.s.SessionFile == "" {
		return nil
	}
	if !snapLocalPath(r.s.SessionFile) {
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
func (r *snapRestorer) finish() error {
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
		if !snapLocalPath(p) {
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
			if !snapLocalPath(p) {
				return r.bad("staged file %q leads outside", p)
			}
			list = append(append(list, p...), 0)
		}
		if _, err := snapGit(r.ctx, r.s, list, "--literal-pathspecs", "add", "-A", "-f", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
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

// say writes the notes: what moved, then what did not.
func (r *snapRestorer) say(files int, fileBytes int64, sessions int) {
	m := r.meta
	var parts []string
	if m.Git {
		what := "a git repository, " + snapBranchAt(m.Branch, m.Head)
		if r.unpushed != "" || r.refetched == "" && m.Head != "" && m.Bundle == 0 {
			what = "a git repository on branch " + cmp.Or(m.Branch, "HEAD")
		}
		parts = append(parts, what, fmt.Sprintf("%d uncommitted file(s) (%s)", files, snapSize(fileBytes)))
		if n := len(m.Deleted); n > 0 {
			parts = append(parts, fmt.Sprintf("%d deleted file(s)", n))
		}
	} else {
		parts = append(parts, fmt.Sprintf("a folder of %d file(s) (%s)", files, snapSize(fileBytes)))
	}
	if r.session {
		parts = append(parts, fmt.Sprintf("your conversation with the agent (%d file(s))", sessions))
	}
	r.notes = append(r.notes, "Your workspace moved to another server: "+strings.Join(parts, ", ")+".")

	limit := snapSize(m.Max)
	var moreFiles int
	var moreBytes int64
	shown := 0
	for _, l := range slices.Concat(m.LeftOut, r.late) {
		switch {
		case l.What == leftHistory:
			why := fmt.Sprintf("over the %s limit", limit)
			if l.Why == whyFailed {
				why = "git could not pack it"
			}
			then := "only the files changed since the last commit are back, in a new repository"
			if r.refetched != "" {
				then = "it was fetched again from " + r.refetched
			}
			size := ""
			if l.Size > 0 {
				size = " (" + snapSize(l.Size) + ")"
			}
			r.notes = append(r.notes, fmt.Sprintf("Not moved (%s): the repository's history%s; %s.", why, size, then))
		case l.Why == whyChanged:
			r.notes = append(r.notes, "Not moved (it changed while the snapshot was taken): "+l.Path+".")
		case shown >= snapshotNotesShown:
			moreFiles++
			moreBytes += l.Size
		case l.What == leftTranscript:
			shown++
			r.notes = append(r.notes, fmt.Sprintf("Not moved (over the %s limit): the agent's session file %s (%s).", limit, l.Path, snapSize(l.Size)))
		default:
			shown++
			r.notes = append(r.notes, fmt.Sprintf("Not moved (over the %s limit): %s (%s).", limit, l.Path, snapSize(l.Size)))
		}
	}
	if moreFiles > 0 {
		r.notes = append(r.notes, fmt.Sprintf("Not moved (over the %s limit): %d more file(s) (%s).", limit, moreFiles, snapSize(moreBytes)))
	}
	if r.unpushed != "" {
		r.notes = append(r.notes, r.unpushed)
	}
}
