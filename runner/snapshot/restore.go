package snapshot

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// Restore rebuilds the workspace s.Dir, which must be empty or
// missing, from the snapshot obs holds under name, and the agent's
// sessions of it in s.Home under the workspace's new name; found is false
// when there is none. The notes tell the person what moved and what did
// not. The object is read whole and checked before anything is written;
// a restore that fails leaves the workspace empty.
func Restore(ctx context.Context, obs jetstream.ObjectStore, name string, s Source) (found bool, notes []string, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
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

	uid, gid, err := restoreTarget(s)
	if err != nil {
		return true, nil, err
	}
	r := &restorer{s: s, uid: uid, gid: gid}
	if r.dir, err = os.OpenRoot(s.Dir); err != nil {
		return true, nil, err
	}
	defer r.dir.Close()
	if r.home, err = os.OpenRoot(s.Home); err != nil {
		return true, nil, err
	}
	defer r.home.Close()
	if err := r.restore(ctx, spool); err != nil {
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
func restoreTarget(s Source) (uid, gid int, err error) {
	owner := func(p string) bool {
		fi, err := os.Stat(p)
		if err != nil {
			return false
		}
		st := fi.Sys().(*syscall.Stat_t)
		uid, gid = int(st.Uid), int(st.Gid)
		return true
	}
	// Dir may be a link to the workspace (a person's directory kept on a
	// disk of their own): where it leads is the one to check.
	switch fi, err := os.Stat(s.Dir); {
	case err == nil:
		if !fi.IsDir() {
			return 0, 0, fmt.Errorf("%w: %s is not a directory", ErrNotEmpty, s.Dir)
		}
		if names, err := os.ReadDir(s.Dir); err != nil {
			return 0, 0, err
		} else if len(names) > 0 {
			return 0, 0, fmt.Errorf("%w: %s", ErrNotEmpty, s.Dir)
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
		if err := lchown(d, uid, gid); err != nil {
			return 0, 0, err
		}
	}
	return uid, gid, nil
}

func lchown(p string, uid, gid int) error {
	if uid == os.Geteuid() && gid == os.Getegid() {
		return nil
	}
	return os.Lchown(p, uid, gid)
}

// restorer is one restore under way.
type restorer struct {
	s         Source
	dir, home *os.Root
	uid, gid  int
	meta      manifest
	limit     int64 // bytes the archive's files may hold
	links     []pending
	dirModes  []pending
	late      []LeftOut
	notes     []string
	session   bool
	refetched string // the remote the history was fetched again from
	unpushed  string // the note on commits not found there
}

// pending is a link to make, or a directory's mode to give, once every
// file is written (finish).
type pending struct {
	root   *os.Root
	path   string
	target string
	mode   fs.FileMode
}

func (r *restorer) bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func (r *restorer) restore(ctx context.Context, spool io.Reader) error {
	gz, err := gzip.NewReader(spool)
	if err != nil {
		return r.bad("%v", err)
	}
	tr := tar.NewReader(gz)
	hdr, err := tr.Next()
	if err != nil || hdr.Name != entryManifest || hdr.Size > 64<<20 {
		return r.bad("no %s first", entryManifest)
	}
	if err := json.NewDecoder(io.LimitReader(tr, hdr.Size)).Decode(&r.meta); err != nil {
		return r.bad("%s: %v", entryManifest, err)
	}
	if r.meta.V != version {
		return fmt.Errorf("%w: version %d, this runner reads %d", ErrInvalid, r.meta.V, version)
	}
	r.limit = max(r.s.max(), min(r.meta.Max, contract.SnapshotsMaxBytes)) + 1<<20
	hdr, err = tr.Next()
	var bundle string
	if err == nil && hdr.Name == entryBundle {
		tmp := ".textslash-restore-" + sandbox.NewMark() + ".bundle"
		defer r.home.Remove(tmp)
		if err := r.file(r.home, tmp, hdr, tr); err != nil {
			return err
		}
		bundle = filepath.Join(r.s.Home, tmp)
		hdr, err = tr.Next()
	}
	if r.meta.Git {
		if err := r.git(ctx, bundle); err != nil {
			return err
		}
	}
	transcripts := transcriptsOf(r.s)
	var files, sessions int
	var fileBytes int64
	for ; err == nil; hdr, err = tr.Next() {
		switch name := hdr.Name; {
		case strings.HasPrefix(name, entryFiles):
			if err := r.entry(r.dir, "", strings.TrimPrefix(name, entryFiles), hdr, tr); err != nil {
				return err
			}
			if hdr.Typeflag == tar.TypeReg {
				files++
				fileBytes += hdr.Size
			}
		case strings.HasPrefix(name, entryClaude):
			if err := r.entry(r.home, transcripts, strings.TrimPrefix(name, entryClaude), hdr, tr); err != nil {
				return err
			}
			if hdr.Typeflag == tar.TypeReg {
				sessions++
			}
		case name == entrySession:
			if err := r.sessionFile(hdr, tr); err != nil {
				return err
			}
		case name == entryLate:
			if err := json.NewDecoder(io.LimitReader(tr, 16<<20)).Decode(&r.late); err != nil {
				return r.bad("%s: %v", entryLate, err)
			}
		default:
			return r.bad("unexpected entry %q", name)
		}
	}
	if err != io.EOF {
		return r.bad("%v", err)
	}
	if err := r.finish(ctx); err != nil {
		return err
	}
	r.say(files, fileBytes, sessions)
	return nil
}

// git makes the repository: from the bundle, or fetched again from the
// project's remote, or new when there was no commit.
func (r *restorer) git(ctx context.Context, bundle string) error {
	m := r.meta
	git := func(args ...string) (string, error) { return runGit(ctx, r.s, nil, args...) }
	if m.Head != "" && !commitRE.MatchString(m.Head) {
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
		now := ""
		if m.Branch != "" {
			if h, err := git("rev-parse", "-q", "--verify", "refs/remotes/origin/"+m.Branch+"^{commit}"); err == nil {
				target, now = strings.TrimSpace(h), "it is at "+shortHash(strings.TrimSpace(h))+" as there"
			}
		}
		if now == "" {
			h, err := git("rev-parse", "-q", "--verify", "refs/remotes/origin/HEAD^{commit}")
			if err != nil {
				return fmt.Errorf("nothing to check out from %s", contract.RedactURL(url))
			}
			target, now = strings.TrimSpace(h), "it starts again from that repository's default branch"
		}
		r.unpushed = fmt.Sprintf("Commits not pushed to %s did not move: %s was at %s, %s.",
			contract.RedactURL(url), cmp.Or(m.Branch, "HEAD"), shortHash(m.Head), now)
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

var commitRE = regexp.MustCompile(`^[0-9a-f]{40,64}$`)

func shortHash(h string) string { return h[:min(len(h), 8)] }

// say writes the notes: what moved, then what did not.
func (r *restorer) say(files int, fileBytes int64, sessions int) {
	m := r.meta
	var parts []string
	if m.Git {
		what := "a git repository, " + branchAt(m.Branch, m.Head)
		if r.unpushed != "" || r.refetched == "" && m.Head != "" && m.Bundle == 0 {
			what = "a git repository on branch " + cmp.Or(m.Branch, "HEAD")
		}
		parts = append(parts, what, fmt.Sprintf("%s (%s)", contract.Plural(files, "uncommitted file"), sizeText(fileBytes)))
		if n := len(m.Deleted); n > 0 {
			parts = append(parts, contract.Plural(n, "deleted file"))
		}
	} else {
		parts = append(parts, fmt.Sprintf("a folder of %s (%s)", contract.Plural(files, "file"), sizeText(fileBytes)))
	}
	if r.session {
		parts = append(parts, fmt.Sprintf("your conversation with the agent (%s)", contract.Plural(sessions, "file")))
	}
	r.notes = append(r.notes, "Your workspace moved to another server: "+strings.Join(parts, ", ")+".")

	limit := sizeText(m.Max)
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
				size = " (" + sizeText(l.Size) + ")"
			}
			r.notes = append(r.notes, fmt.Sprintf("Not moved (%s): the repository's history%s; %s.", why, size, then))
		case l.Why == whyChanged:
			r.notes = append(r.notes, "Not moved (it changed while the snapshot was taken): "+l.Path+".")
		case shown >= notesShown:
			moreFiles++
			moreBytes += l.Size
		case l.What == leftTranscript:
			shown++
			r.notes = append(r.notes, fmt.Sprintf("Not moved (over the %s limit): the agent's session file %s (%s).", limit, l.Path, sizeText(l.Size)))
		default:
			shown++
			r.notes = append(r.notes, fmt.Sprintf("Not moved (over the %s limit): %s (%s).", limit, l.Path, sizeText(l.Size)))
		}
	}
	if moreFiles > 0 {
		r.notes = append(r.notes, fmt.Sprintf("Not moved (over the %s limit): %s (%s).", limit, contract.Plural(moreFiles, "more file"), sizeText(moreBytes)))
	}
	if r.unpushed != "" {
		r.notes = append(r.notes, r.unpushed)
	}
}
