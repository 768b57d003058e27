package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// Take stores the state of the workspace s.Dir (and the agent's
// sessions of it in s.Home) in obs under name, replacing the one before.
// What does not fit s.Max is left out and said in the snapshot, for the
// restore's notes: the cap never makes it fail.
func Take(ctx context.Context, obs jetstream.ObjectStore, name string, s Source) (Info, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	dir, err := os.OpenRoot(s.Dir)
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: %w", err)
	}
	defer dir.Close()
	home, err := os.OpenRoot(s.Home)
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: %w", err)
	}
	defer home.Close()

	meta := &manifest{V: version, Dir: s.Dir, URL: s.URL, Max: s.max()}
	var files []*entry
	var bundle *entry
	if fi, err := dir.Lstat(".git"); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
		// The workspace's own repository (not one around it).
		files, bundle, err = takeGit(ctx, s, dir, home, meta)
		if bundle != nil {
			defer home.Remove(bundle.path)
		}
		if err != nil {
			return Info{}, err
		}
	}
	if !meta.Git {
		if files, err = walk(dir, ".", entryFiles); err != nil {
			return Info{}, fmt.Errorf("snapshot: %w", err)
		}
	}
	transcripts, tdir, err := listTranscripts(home, s)
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: %w", err)
	}
	if tdir != nil {
		defer tdir.Close()
	}
	session := currentSession(home, s.SessionFile, transcripts, meta)
	entries, slack := plan(meta, bundle, files, transcripts, session)
	info := Info{Git: meta.Git, Branch: meta.Branch, Head: meta.Head, Bundle: meta.Bundle,
		Files: meta.Files, FileBytes: meta.FileBytes, Deleted: len(meta.Deleted), Transcripts: meta.Transcripts}
	var late []LeftOut
	if info.Size, info.Raw, late, err = store(ctx, obs, name, meta, entries, session, slack); err != nil {
		return Info{}, err
	}
	info.LeftOut = append(slices.Clone(meta.LeftOut), late...)
	return info, nil
}

// currentSession is the session file's content, the agent's session id,
// when it names one; its transcripts are marked current and meta says a
// session is kept.
func currentSession(home *os.Root, file string, transcripts []*entry, meta *manifest) []byte {
	id := readSessionID(home, file)
	if id == "" {
		return nil
	}
	for _, e := range transcripts {
		rel := strings.TrimPrefix(e.name, entryClaude)
		e.current = rel == id+".jsonl" || strings.HasPrefix(rel, id+"/")
	}
	meta.Session = true
	return []byte(id + "\n")
}

// store writes the archive of entries into obs under name: its
// size stored and before compression, and what was left out late
// (writeArchive).
func store(ctx context.Context, obs jetstream.ObjectStore, name string, meta *manifest, entries []*entry, session []byte, slack int64) (size, raw int64, late []LeftOut, err error) {
	// Written while the object store reads it: no copy on disk.
	pr, pw := io.Pipe()
	type written struct {
		late []LeftOut
		raw  int64
		err  error
	}
	done := make(chan written, 1)
	go func() {
		late, raw, err := writeArchive(pw, meta, entries, session, slack)
		pw.CloseWithError(err)
		done <- written{late, raw, err}
	}()
	oi, err := obs.Put(ctx, jetstream.ObjectMeta{
		Name:        name,
		Description: describe(meta),
		Metadata:    headers(meta),
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

// takeGit reads the repository in dir: meta's git fields, the entries
// of its uncommitted work, and its history bundled into a file in home.
func takeGit(ctx context.Context, s Source, dir, home *os.Root, meta *manifest) (files []*entry, bundle *entry, err error) {
	git := func(args ...string) (string, error) { return runGit(ctx, s, nil, args...) }
	if _, err := git("rev-parse", "--git-dir"); err != nil {
		return nil, nil, nil // not a repository git can read: its files are copied as they are
	}
	meta.Git = true
	gitMeta(git, meta)
	if files, err = uncommitted(git, dir, meta); err != nil {
		return nil, nil, err
	}
	bundle, err = bundleHistory(git, s, home, meta)
	return files, bundle, err
}

// gitMeta reads meta's branch, head, origin and upstream with git.
func gitMeta(git func(args ...string) (string, error), meta *manifest) {
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

// gitList is the NUL-separated paths git prints with args.
func gitList(git func(args ...string) (string, error), args ...string) ([]string, error) {
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

// uncommitted is the entries of the repository's uncommitted work:
// against HEAD (staged or not, renames as a deletion and an addition), or
// every file of the index before the first commit; and the untracked
// files git does not ignore. meta lists what is staged and deleted.
func uncommitted(git func(args ...string) (string, error), dir *os.Root, meta *manifest) (files []*entry, err error) {
	list := func(args ...string) ([]string, error) { return gitList(git, args...) }
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
		if localPath(p) {
			meta.Staged = append(meta.Staged, p)
		}
	}
	for _, p := range deleted {
		if localPath(p) {
			meta.Deleted = append(meta.Deleted, p)
		}
	}
	others, err := list("ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	for _, p := range others {
		if sub, ok := strings.CutSuffix(p, "/"); ok && localPath(sub) {
			// A repository of its own inside: all of it.
			es, err := walk(dir, sub, entryFiles)
			if err != nil {
				return nil, err
			}
			files = append(files, es...)
			continue
		}
		changed = append(changed, p)
	}
	for _, p := range changed {
		if !localPath(p) {
			continue
		}
		e, err := statEntry(dir, p, entryFiles+p)
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

// bundleHistory bundles the repository's history, when it has any, into a
// file in home; a bundle git could not make is left out (in meta).
func bundleHistory(git func(args ...string) (string, error), s Source, home *os.Root, meta *manifest) (*entry, error) {
	if refs, err := git("for-each-ref", "--count=1", "--format=%(refname)"); err != nil || strings.TrimSpace(refs) == "" {
		return nil, nil
	}
	tmp := ".textslash-snapshot-" + sandbox.NewMark() + ".bundle"
	if _, err := git("bundle", "create", "-q", filepath.Join(s.Home, tmp), "--all"); err != nil {
		home.Remove(tmp)
		meta.LeftOut = append(meta.LeftOut, LeftOut{What: leftHistory, Why: whyFailed})
		return nil, nil
	}
	bundle, err := statEntry(home, tmp, entryBundle)
	if err != nil || bundle == nil || !bundle.mode.IsRegular() {
		home.Remove(tmp)
		return nil, fmt.Errorf("snapshot: bundle: %v", err)
	}
	return bundle, nil
}

// runGit runs git as the agent user in the workspace and returns its
// output.
func runGit(ctx context.Context, s Source, stdin []byte, args ...string) (string, error) {
	cmd := s.Command(ctx, "git", args...)
	out := &output.CappedBuffer{Max: 64 << 20}
	errs := &output.CappedBuffer{Max: 4 << 10}
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
