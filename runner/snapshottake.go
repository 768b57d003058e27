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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf16"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/session"
)

// takeSnapshot stores the state of the workspace s.Dir (and the agent's
// sessions of it in s.Home) in obs under name, replacing the one before.
// What does not fit s.Max is left out and said in the snapshot, for the
// restore's notes: the cap never makes it fail.
func takeSnapshot(ctx context.Context, obs jetstream.ObjectStore, name string, s snapshotSource) (snapshotInfo, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, snapshotTimeout)
		defer cancel()
	}
	dir, err := os.OpenRoot(s.Dir)
	if err != nil {
		return snapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	defer dir.Close()
	home, err := os.OpenRoot(s.Home)
	if err != nil {
		return snapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	defer home.Close()

	meta := &snapshotMeta{V: snapshotVersion, Dir: s.Dir, URL: s.URL, Max: s.max()}
	var files []*snapEntry
	var bundle *snapEntry
	if fi, err := dir.Lstat(".git"); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
		// The workspace's own repository (not one around it).
		files, bundle, err = gitSnapshot(ctx, s, dir, home, meta)
		if bundle != nil {
			defer home.Remove(bundle.path)
		}
		if err != nil {
			return snapshotInfo{}, err
		}
	}
	if !meta.Git {
		if files, err = snapWalk(dir, ".", snapFiles); err != nil {
			return snapshotInfo{}, fmt.Errorf("snapshot: %w", err)
		}
	}
	transcripts, tdir, err := snapTranscripts(home, s.Dir)
	if err != nil {
		return snapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	if tdir != nil {
		defer tdir.Close()
	}
	session := snapCurrentSession(home, s.SessionFile, transcripts, meta)
	entries, slack := planSnapshot(meta, bundle, files, transcripts, session)
	info := snapshotInfo{Git: meta.Git, Branch: meta.Branch, Head: meta.Head, Bundle: meta.Bundle,
		Files: meta.Files, FileBytes: meta.FileBytes, Deleted: len(meta.Deleted), Transcripts: meta.Transcripts}
	var late []snapshotLeftOut
	if info.Size, info.Raw, late, err = storeSnapshot(ctx, obs, name, meta, entries, session, slack); err != nil {
		return snapshotInfo{}, err
	}
	info.LeftOut = append(slices.Clone(meta.LeftOut), late...)
	return info, nil
}

// snapCurrentSession is the session file's content, the agent's session id,
// when it names one; its transcripts are marked current and meta says a
// session is kept.
func snapCurrentSession(home *os.Root, file string, transcripts []*snapEntry, meta *snapshotMeta) []byte {
	id := snapSessionID(home, file)
	if id == "" {
		return nil
	}
	for _, e := range transcripts {
		rel := strings.TrimPrefix(e.name, snapClaude)
		e.current = rel == id+".jsonl" || strings.HasPrefix(rel, id+"/")
	}
	meta.Session = true
	return []byte(id + "\n")
}

// storeSnapshot writes the archive of entries into obs under name: its
// size stored and before compression, and what was left out late
// (writeSnapshot).
func storeSnapshot(ctx context.Context, obs jetstream.ObjectStore, name string, meta *snapshotMeta, entries []*snapEntry, session []byte, slack int64) (size, raw int64, late []snapshotLeftOut, err error) {
	// Written while the object store reads it: no copy on disk.
	pr, pw := io.Pipe()
	type written struct {
		late []snapshotLeftOut
		raw  int64
		err  error
	}
	done := make(chan written, 1)
	go func() {
		late, raw, err := writeSnapshot(pw, meta, entries, session, slack)
		pw.CloseWithError(err)
		done <- written{late, raw, err}
	}()
	oi, err := obs.Put(ctx, jetstream.ObjectMeta{
		Name:        name,
		Description: describeSnapshot(meta),
		Metadata:    snapshotHeaders(meta),
	}, pr)
	pr.CloseWithError(errors.New("snapshot not stored")) // the writer stops if Put did not read it all
	w := <-done
	if w.err != nil {
		return 0, 0, nil, fmt.Errorf("snapshot %s: %w", name, w.err)
	}
	if err != nil {
		return 0, 0, nil, fmt.Errorf("snapshot %s: %w", name, err)
	}
	return int64(oi.Size), w.raw, w.late, nil
}

// gitSnapshot reads the repository in dir: meta's git fields, the entries
// of its uncommitted work, and its history bundled into a file in home.
func gitSnapshot(ctx context.Context, s snapshotSource, dir, home *os.Root, meta *snapshotMeta) (files []*snapEntry, bundle *snapEntry, err error) {
	git := func(args ...string) (string, error) { return snapGit(ctx, s, nil, args...) }
	if _, err := git("rev-parse", "--git-dir"); err != nil {
		return nil, nil, nil // not a repository git can read: its files are copied as they are
	}
	meta.Git = true
	snapGitMeta(git, meta)
	if files, err = snapUncommitted(git, dir, meta); err != nil {
		return nil, nil, err
	}
	bundle, err = snapHistory(git, s, home, meta)
	return files, bundle, err
}

// snapGitMeta reads meta's branch, head, origin and upstream with git.
func snapGitMeta(git func(args ...string) (string, error), meta *snapshotMeta) {
	if ref, err := git("symbolic-ref", "-q", "HEAD"); err == nil {
		meta.Branch = strings.TrimPrefix(strings.TrimSpace(ref), "refs/heads/")
	}
	if head, err := git("rev-parse", "-q", "--verify", "HEAD^{commit}"); err == nil {
		meta.Head = strings.TrimSpace(head)
	}
	if url, err := git("config", "--get", "remote.origin.url"); err == nil {
		meta.Origin = strings.TrimSpace(url)
	}
	if meta.Branch != "" {
		remote, _ := git("config", "--get", "branch."+meta.Branch+".remote")
		merge, _ := git("config", "--get", "branch."+meta.Branch+".merge")
		if strings.TrimSpace(remote) == "origin" {
			meta.Upstream = strings.TrimSpace(merge)
		}
	}
}

// snapList is the NUL-separated paths git prints with args.
func snapList(git func(args ...string) (string, error), args ...string) ([]string, error) {
	out, err := git(args...)
	if err != nil {
		return nil, err
	}
	var paths []string
	for p := range strings.SplitSeq(out, "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// snapUncommitted is the entries of the repository's uncommitted work:
// against HEAD (staged or not, renames as a deletion and an addition), or
// every file of the index before the first commit; and the untracked
// files git does not ignore. meta lists what is staged and deleted.
func snapUncommitted(git func(args ...string) (string, error), dir *os.Root, meta *snapshotMeta) (files []*snapEntry, err error) {
	list := func(args ...string) ([]string, error) { return snapList(git, args...) }
	var changed, deleted, staged []string
	if meta.Head != "" {
		diff := []string{"diff", "--name-only", "-z", "--no-renames", "--no-ext-diff", "--no-textconv"}
		if changed, err = list(append(diff, "--diff-filter=d", "HEAD", "--")...); err != nil {
			return nil, err
		}
		if deleted, err = list(append(diff, "--diff-filter=D", "HEAD", "--")...); err != nil {
			return nil, err
		}
		if staged, err = list(append(diff, "--cached", "HEAD", "--")...); err != nil {
			return nil, err
		}
	} else {
		if changed, err = list("ls-files", "-z", "--cached"); err != nil {
			return nil, err
		}
		staged = slices.Clone(changed)
	}
	for _, p := range staged {
		if snapLocalPath(p) {
			meta.Staged = append(meta.Staged, p)
		}
	}
	for _, p := range deleted {
		if snapLocalPath(p) {
			meta.Deleted = append(meta.Deleted, p)
		}
	}
	others, err := list("ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	for _, p := range others {
		if sub, ok := strings.CutSuffix(p, "/"); ok && snapLocalPath(sub) {
			// A repository of its own inside: all of it.
			es, err := snapWalk(dir, sub, snapFiles)
			if err != nil {
				return nil, err
			}
			files = append(files, es...)
			continue
		}
		changed = append(changed, p)
	}
	for _, p := range changed {
		if !snapLocalPath(p) {
			continue
		}
		e, err := snapStatEntry(dir, p, snapFiles+p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted from the index's files before the first commit
			}
			return nil, err
		}
		if e != nil && !e.mode.IsDir() { // a directory here is a submodule: not moved
			files = append(files, e)
		}
	}

	return files, nil
}

// snapHistory bundles the repository's history, when it has any, into a
// file in home; a bundle git could not make is left out (in meta).
func snapHistory(git func(args ...string) (string, error), s snapshotSource, home *os.Root, meta *snapshotMeta) (*snapEntry, error) {
	if refs, err := git("for-each-ref", "--count=1", "--format=%(refname)"); err != nil || strings.TrimSpace(refs) == "" {
		return nil, nil
	}
	tmp := ".textslash-snapshot-" + sandbox.NewMark() + ".bundle"
	if _, err := git("bundle", "create", "-q", filepath.Join(s.Home, tmp), "--all"); err != nil {
		home.Remove(tmp)
		meta.LeftOut = append(meta.LeftOut, snapshotLeftOut{What: leftHistory, Why: whyFailed})
		return nil, nil
	}
	bundle, err := snapStatEntry(home, tmp, snapBundle)
	if err != nil || bundle == nil || !bundle.mode.IsRegular() {
		home.Remove(tmp)
		return nil, fmt.Errorf("snapshot: bundle: %v", err)
	}
	return bundle, nil
}

// snapGit runs git as the agent user in the workspace and returns its
// output.
func snapGit(ctx context.Context, s snapshotSource, stdin []byte, args ...string) (string, error) {
	cmd := s.Command(ctx, "git", args...)
	out := &sandbox.CappedBuffer{Max: 64 << 20}
	errs := &sandbox.CappedBuffer{Max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, errs
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	sandbox.EndGroup(cmd)
	if err == nil && out.Truncated() {
		err = errors.New("output too long")
	}
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errs.String()))
	}
	return out.String(), nil
}

// localPath: a clean relative path that stays beneath its directory.
func snapLocalPath(p string) bool {
	return filepath.IsLocal(p) && path.Clean(p) == p && !strings.Contains(p, "\x00")
}

// statEntry is the entry of p beneath root, named name in the archive;
// nil for what is not moved (a FIFO, a socket, a device).
func snapStatEntry(root *os.Root, p, name string) (*snapEntry, error) {
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, err
	}
	e := &snapEntry{name: name, root: root, path: p, mode: fi.Mode(), mtime: fi.ModTime()}
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

// walkEntries lists everything beneath dir in root, dir included unless
// it is ".", named prefix + its path; links are not followed.
func snapWalk(root *os.Root, dir, prefix string) ([]*snapEntry, error) {
	var es []*snapEntry
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
		e, err := snapStatEntry(root, p, prefix+p)
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

// claudeProjectDir is the directory Claude Code keeps the sessions of the
// working directory dir in, beneath ~/.claude/projects: dir with every
// UTF-16 code unit that is not an ASCII letter or digit made "-", cut at
// 200 with a hash of dir added when longer (Claude Code 2.1's KN(), the
// hash being Java's String.hashCode, absolute, in base 36). The CLI names
// its working directory with symlinks resolved.
func claudeProjectDir(dir string) string {
	units := utf16.Encode([]rune(dir))
	b := make([]byte, len(units))
	var h int32
	for i, c := range units {
		h = 31*h + int32(c)
		if c < 0x80 && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = byte(c)
		} else {
			b[i] = '-'
		}
	}
	if len(b) <= 200 {
		return string(b)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return string(b[:200]) + "-" + strconv.FormatInt(abs, 36)
}

// transcriptsOf is the directory of dir's sessions, beneath the home.
func snapTranscriptsOf(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return path.Join(".claude", "projects", claudeProjectDir(dir))
}

// transcriptEntries lists the agent's session files of dir in home; the
// root they are read from is returned to be closed.
func snapTranscripts(home *os.Root, dir string) ([]*snapEntry, *os.Root, error) {
	rel := snapTranscriptsOf(dir)
	if fi, err := home.Lstat(rel); err != nil || !fi.IsDir() {
		rel = path.Join(".claude", "projects", claudeProjectDir(dir)) // as given, links unresolved
		if fi, err := home.Lstat(rel); err != nil || !fi.IsDir() {
			return nil, nil, nil
		}
	}
	sub, err := home.OpenRoot(rel)
	if err != nil {
		return nil, nil, err
	}
	es, err := snapWalk(sub, ".", snapClaude)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	return es, sub, nil
}

// readSessionID is the valid session id in home's file name, or "".
func snapSessionID(home *os.Root, name string) string {
	if name == "" || !snapLocalPath(name) {
		return ""
	}
	f, err := home.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, 256))
	id := strings.TrimSpace(string(b))
	if !session.Valid(id) {
		return ""
	}
	return id
}

// planSnapshot decides what goes in: when everything would pass
// meta.Max, the history when the restore can fetch it from meta.URL, then
// the largest files, then the transcripts (the current session's last),
// then the history in any case, are left out (and listed in meta). It
// returns the entries to write in order and the bytes to spare.
func planSnapshot(meta *snapshotMeta, bundle *snapEntry, files, transcripts []*snapEntry, session []byte) ([]*snapEntry, int64) {
	out := map[*snapEntry]bool{}
	var total int64 = 1024 // the archive's end
	for _, e := range slices.Concat(files, transcripts) {
		total += e.cost()
	}
	if bundle != nil {
		total += bundle.cost()
	}
	if session != nil {
		total += 1024
	}
	metaBytes := func() int64 {
		b, _ := json.Marshal(meta)
		return 512 + snapPad512(int64(len(b)))
	}
	// The exact size of snapshot.json after each choice would cost a
	// marshalling per file left out; an upper bound is kept instead.
	mb := metaBytes()
	leave := func(e *snapEntry, what string) {
		out[e] = true
		total -= e.cost()
		p := ""
		if what != leftHistory {
			p = strings.TrimPrefix(strings.TrimPrefix(e.name, snapFiles), snapClaude)
		}
		meta.LeftOut = append(meta.LeftOut, snapshotLeftOut{What: what, Path: p, Size: e.size, Why: whyCap})
		q, _ := json.Marshal(p)
		mb += int64(len(q)) + 64
	}
	var order []func() // each leaves one thing out
	queue := func(es []*snapEntry, what string) {
		for _, e := range es {
			order = append(order, func() { leave(e, what) })
		}
	}
	if bundle != nil && meta.URL != "" {
		queue([]*snapEntry{bundle}, leftHistory)
	}
	queue(snapBySize(files), leftFile)
	queue(snapBySize(transcripts), leftTranscript)
	if bundle != nil && meta.URL == "" {
		queue([]*snapEntry{bundle}, leftHistory)
	}
	for len(order) > 0 {
		if total+mb <= meta.Max {
			if mb = metaBytes(); total+mb <= meta.Max { // the bound was loose
				break
			}
		}
		order[0]()
		order = order[1:]
	}
	return snapKept(meta, bundle, files, transcripts, out), max(0, meta.Max-total-metaBytes())
}

// snapBySize is the files among es with bytes, the largest first, a
// transcript of the current session after the others: the order in which
// planSnapshot leaves them out.
func snapBySize(es []*snapEntry) []*snapEntry {
	var rs []*snapEntry
	for _, e := range es {
		if e.mode.IsRegular() && e.size > 0 {
			rs = append(rs, e)
		}
	}
	slices.SortStableFunc(rs, func(a, b *snapEntry) int {
		if a.current != b.current { // the current session last
			if a.current {
				return 1
			}
			return -1
		}
		return cmp.Compare(b.size, a.size)
	})
	return rs
}

// snapKept is the entries to write, in order, all but those left out,
// and counts them in meta.
func snapKept(meta *snapshotMeta, bundle *snapEntry, files, transcripts []*snapEntry, out map[*snapEntry]bool) []*snapEntry {
	var entries []*snapEntry
	if bundle != nil && !out[bundle] {
		entries = append(entries, bundle)
		meta.Bundle = bundle.size
	}
	for _, e := range files {
		if !out[e] {
			entries = append(entries, e)
			if e.mode.IsRegular() {
				meta.Files++
				meta.FileBytes += e.size
			}
		}
	}
	for _, e := range transcripts {
		if !out[e] {
			entries = append(entries, e)
			if e.mode.IsRegular() {
				meta.Transcripts++
			}
		}
	}
	return entries
}

// writeSnapshot writes the archive to w. A file grown past the bytes to
// spare since it was planned, or no longer a file, is left out (listed in
// late.json); raw counts the archive's bytes before compression.
func writeSnapshot(w io.Writer, meta *snapshotMeta, entries []*snapEntry, session []byte, slack int64) (late []snapshotLeftOut, raw int64, err error) {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	cw := &snapCountWriter{w: gz}
	tw := tar.NewWriter(cw)
	mj, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return nil, 0, err
	}
	if err := snapTarBytes(tw, snapMeta, mj); err != nil {
		return nil, 0, err
	}
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: int64(e.mode.Perm()), ModTime: e.mtime}
		switch {
		case e.mode.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, e.name+"/"
		case e.mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.link
		default:
			f, err := e.root.OpenFile(e.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
			if errors.Is(err, fs.ErrNotExist) {
				continue // gone: nothing to move
			}
			var fi fs.FileInfo
			if err == nil {
				fi, err = f.Stat()
			}
			if err != nil || !fi.Mode().IsRegular() || fi.Size() > e.size+slack {
				if f != nil {
					f.Close()
				}
				if !strings.HasPrefix(e.name, snapBundle) {
					late = append(late, snapshotLeftOut{What: leftFile, Path: strings.TrimPrefix(e.name, snapFiles), Why: whyChanged})
					if strings.HasPrefix(e.name, snapClaude) {
						late[len(late)-1].What, late[len(late)-1].Path = leftTranscript, strings.TrimPrefix(e.name, snapClaude)
					}
					continue
				}
				return nil, 0, fmt.Errorf("bundle: %v", err)
			}
			slack -= max(0, fi.Size()-e.size)
			hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, fi.Size(), int64(fi.Mode().Perm())
			err = tw.WriteHeader(hdr)
			if err == nil {
				// A file shrinking while it is read cannot be written
				// whole: the snapshot fails, the one before stays.
				_, err = io.CopyN(tw, f, hdr.Size)
			}
			f.Close()
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", e.name, err)
			}
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, 0, err
		}
	}
	if session != nil {
		if err := snapTarBytes(tw, snapSession, session); err != nil {
			return nil, 0, err
		}
	}
	if len(late) > 0 {
		lj, _ := json.Marshal(late)
		if err := snapTarBytes(tw, snapLate, lj); err != nil {
			return nil, 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, 0, err
	}
	if err := gz.Close(); err != nil {
		return nil, 0, err
	}
	return late, cw.n, nil
}

func snapTarBytes(tw *tar.Writer, name string, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(len(data))}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

type snapCountWriter struct {
	w io.Writer
	n int64
}

func (c *snapCountWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
