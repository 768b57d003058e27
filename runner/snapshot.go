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
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// Workspace snapshots (issue 19): the state of a person's workspace, kept
// in contract.BucketSnapshots, so that the runner taking the person over
// rebuilds it when the one holding it is gone.
//
// A snapshot is one gzipped tar, in this order:
//
//	snapshot.json   snapshotMeta: the kind, branch, HEAD, origin, what was
//	                deleted, staged or left out
//	repo.bundle     git bundle create --all (a repository with commits,
//	                unless left out)
//	files/<path>    the uncommitted work: files changed since HEAD and
//	                untracked ones git does not ignore (every file when the
//	                workspace is no repository); symlinks as symlinks
//	claude/<path>   the agent's session transcripts of the workspace:
//	                <home>/.claude/projects/<claudeProjectDir(dir)>/…
//	session         the session id file
//	late.json       what was left out while writing (a file that changed)
//
// Git runs as the agent user (snapshotSource.Command); the archive is read
// and written here, through os.Root, so nothing is read or written outside
// the workspace and the home whatever links the agent left.

const (
	snapshotVersion = 1
	// snapshotMaxDefault bounds a snapshot when snapshotSource.Max is 0.
	snapshotMaxDefault = 100 << 20
	// snapshotTimeout bounds a take or restore without a deadline (a
	// restore may fetch the repository again from its remote).
	snapshotTimeout = 10 * time.Minute
	// snapshotNotesShown is how many left-out files the notes name.
	snapshotNotesShown = 10

	snapMeta    = "snapshot.json"
	snapBundle  = "repo.bundle"
	snapFiles   = "files/"
	snapClaude  = "claude/"
	snapSession = "session"
	snapLate    = "late.json"
)

var (
	// errSnapshotBad: an archive that is not a snapshot, or one trying to
	// write outside the workspace or home; nothing is written outside.
	errSnapshotBad = errors.New("not a valid snapshot")
	// errSnapshotNotEmpty: a snapshot is restored into an empty or missing
	// workspace only.
	errSnapshotNotEmpty = errors.New("the workspace to restore into is not empty")
)

// snapshotSource is a workspace as takeSnapshot and restoreSnapshot see it.
type snapshotSource struct {
	// Dir is the workspace, Home the agent's home.
	Dir, Home string
	// SessionFile names the file in Home holding the agent's session id
	// (sessionFileOf(project)).
	SessionFile string
	// URL is the project's remote ("" for none): a snapshot over Max
	// leaves the repository's history out when there is one, and the
	// restore fetches it from there.
	URL string
	// Max bounds the archive (before compression); 0: snapshotMaxDefault.
	Max int64
	// Owner gets what restoreSnapshot creates; nil: the owner of Dir, or
	// of Home when Dir is missing.
	Owner *agentUser
	// Command runs a program in Dir as the agent user (Run.Command).
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
}

func (s snapshotSource) max() int64 {
	if s.Max <= 0 {
		return snapshotMaxDefault
	}
	return s.Max
}

// snapshotMeta is snapshot.json.
type snapshotMeta struct {
	V   int    `json:"v"`
	Dir string `json:"dir"` // where it was taken
	Git bool   `json:"git"`
	// Branch is the checked out branch ("" : detached); Head its commit
	// ("" : no commit yet).
	Branch string `json:"branch,omitempty"`
	Head   string `json:"head,omitempty"`
	// Origin is the origin remote's URL; Upstream the branch's merge ref
	// there (branch.<Branch>.merge, when its remote is origin).
	Origin   string `json:"origin,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	URL      string `json:"url,omitempty"` // snapshotSource.URL
	Bundle   int64  `json:"bundle,omitempty"`
	// Files and FileBytes count the regular files under files/.
	Files     int   `json:"files"`
	FileBytes int64 `json:"file_bytes"`
	// Deleted are tracked files deleted and not committed; Staged are
	// the paths whose change was staged (git add): staged again on
	// restore, as the worktree has them (a partly staged file comes back
	// wholly staged).
	Deleted     []string          `json:"deleted,omitempty"`
	Staged      []string          `json:"staged,omitempty"`
	Transcripts int               `json:"transcripts"`
	Session     bool              `json:"session,omitempty"`
	Max         int64             `json:"max"`
	LeftOut     []snapshotLeftOut `json:"left_out,omitempty"`
}

// snapshotLeftOut is something a snapshot does not hold.
type snapshotLeftOut struct {
	What string `json:"what"` // leftHistory, leftFile or leftTranscript
	Path string `json:"path,omitempty"`
	Size int64  `json:"size,omitempty"`
	Why  string `json:"why"` // whyCap, whyChanged or whyFailed
}

const (
	leftHistory    = "history"
	leftFile       = "file"
	leftTranscript = "transcript"
	whyCap         = "cap"
	whyChanged     = "changed"
	whyFailed      = "failed"
)

// snapshotInfo says what takeSnapshot stored.
type snapshotInfo struct {
	Size        int64 // the object's bytes
	Raw         int64 // the archive's bytes before compression
	Git         bool
	Branch      string
	Head        string
	Bundle      int64 // bytes of the repository's history; 0: not stored
	Files       int   // files moved, FileBytes their bytes
	FileBytes   int64
	Deleted     int
	Transcripts int
	LeftOut     []snapshotLeftOut
}

// snapEntry is one thing to put in the archive.
type snapEntry struct {
	name    string   // in the archive
	root    *os.Root // read from
	path    string   // beneath root
	mode    fs.FileMode
	size    int64
	link    string
	mtime   time.Time
	current bool // a transcript of the session in the session file
}

// cost is an upper bound of the entry's bytes in the archive.
func (e *snapEntry) cost() int64 {
	n := 512 + snapPad512(e.size)
	if long := e.name + e.link; len(e.name) > 100 || len(e.link) > 100 || strings.ContainsFunc(long, func(r rune) bool { return r >= 0x80 }) {
		n += 512 + snapPad512(int64(len(long)+64)) // a PAX header
	}
	return n
}

func snapPad512(n int64) int64 { return (n + 511) / 512 * 512 }

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
func snapCurrentSession(home *os.Root, sessionFile string, transcripts []*snapEntry, meta *snapshotMeta) []byte {
	id := snapSessionID(home, sessionFile)
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
	tmp := ".textslash-snapshot-" + newRunMark() + ".bundle"
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
	out := &cappedBuffer{max: 64 << 20}
	errs := &cappedBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, errs
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	endGroup(cmd)
	if err == nil && out.truncated {
		err = errors.New("output too long")
	}
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errs.buf.String()))
	}
	return out.buf.String(), nil
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
	if !sessionRE.MatchString(id) {
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

// describeSnapshot is the object's description: what it holds, in sizes.
func describeSnapshot(m *snapshotMeta) string {
	var b strings.Builder
	if m.Git {
		fmt.Fprintf(&b, "git repository, %s", snapBranchAt(m.Branch, m.Head))
		if m.Bundle > 0 {
			fmt.Fprintf(&b, "; history %s", snapSize(m.Bundle))
		}
		fmt.Fprintf(&b, "; %d uncommitted file(s), %s; %d deleted", m.Files, snapSize(m.FileBytes), len(m.Deleted))
	} else {
		fmt.Fprintf(&b, "folder; %d file(s), %s", m.Files, snapSize(m.FileBytes))
	}
	fmt.Fprintf(&b, "; %d session file(s)", m.Transcripts)
	if n := len(m.LeftOut); n > 0 {
		var size int64
		for _, l := range m.LeftOut {
			size += l.Size
		}
		fmt.Fprintf(&b, "; left out %d (%s, limit %s)", n, snapSize(size), snapSize(m.Max))
	}
	return b.String()
}

// snapshotHeaders is the object's metadata.
func snapshotHeaders(m *snapshotMeta) map[string]string {
	h := map[string]string{
		"version":    strconv.Itoa(m.V),
		"kind":       "folder",
		"dir":        m.Dir,
		"files":      strconv.Itoa(m.Files),
		"file_bytes": strconv.FormatInt(m.FileBytes, 10),
		"left_out":   strconv.Itoa(len(m.LeftOut)),
	}
	if m.Git {
		h["kind"] = "git"
		h["branch"], h["head"] = m.Branch, m.Head
		h["history_bytes"] = strconv.FormatInt(m.Bundle, 10)
		if m.Origin != "" {
			h["origin"] = contract.RedactURL(m.Origin)
		}
	}
	return h
}

func snapBranchAt(branch, head string) string {
	short := head
	if len(short) > 8 {
		short = short[:8]
	}
	switch {
	case head == "" && branch != "":
		return "branch " + branch + " (no commits yet)"
	case head == "":
		return "no commits yet"
	case branch == "":
		return "detached at " + short
	}
	return "branch " + branch + " at " + short
}

// snapSize says n bytes for people.
func snapSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 10<<20:
		return fmt.Sprintf("%d MB", (n+1<<19)>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", (n+1<<9)>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

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
		uid, gid = int(s.Owner.uid), int(s.Owner.gid)
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
		tmp := ".textslash-restore-" + newRunMark() + ".bundle"
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

// sessionFile writes the session id file in the home.
func (r *snapRestorer) sessionFile(hdr *tar.Header, tr io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(tr, 257))
	if err != nil || len(b) > 256 || !sessionRE.MatchString(strings.TrimSpace(string(b))) {
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
