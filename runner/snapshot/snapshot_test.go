package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/sandbox"
)

// newStore is the snapshots object store of a fresh provisioned server.
func newStore(t testing.TB) jetstream.ObjectStore {
	t.Helper()
	s := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), s.JS, bus.Options{}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	obs, err := s.JS.ObjectStore(t.Context(), contract.BucketSnapshots)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// testUser is who workspaces belong to: the agent user when the test runs
// as root (as the runner does), else this process's user (nil).
func testUser(t testing.TB) *sandbox.User {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := sandbox.LookupUser(claudetest.AgentUser(t))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// place makes a workspace named name and a home, in a directory of
// their own, the way the runner makes them, and their Source.
func place(t testing.TB, u *sandbox.User, name string) Source {
	t.Helper()
	root := t.TempDir()
	if u != nil { // t.TempDir and its parent are 0700 root: let the agent user through
		for _, d := range []string{filepath.Dir(root), root} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir, home := filepath.Join(root, name), filepath.Join(root, "home")
	if err := sandbox.PrepareWorkspace(dir, home, u); err != nil {
		t.Fatal(err)
	}
	return Source{
		Dir: dir, Home: home, SessionFile: ".textslash-session.proj",
		Owner: u, Command: sandbox.CommandFunc(dir, home, u, false),
	}
}

// gitT runs git as the workspace's owner and returns its output.
func gitT(t testing.TB, s Source, args ...string) string {
	t.Helper()
	out, err := runGit(t.Context(), s, nil, append([]string{"-c", "user.name=t", "-c", "user.email=t@localhost"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// put writes rel beneath base (its new parents too), owned by u.
func put(t testing.TB, u *sandbox.User, base, rel string, data []byte, perm fs.FileMode) {
	t.Helper()
	p := filepath.Join(base, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	give(t, u, base, rel)
}

// symlink makes the symlink rel beneath base, owned by u.
func symlink(t testing.TB, u *sandbox.User, base, rel, target string) {
	t.Helper()
	if err := os.Symlink(target, filepath.Join(base, rel)); err != nil {
		t.Fatal(err)
	}
	give(t, u, base, rel)
}

// give gives rel beneath base, and the directories between, to u.
func give(t testing.TB, u *sandbox.User, base, rel string) {
	t.Helper()
	if u == nil {
		return
	}
	for p := filepath.Join(base, rel); p != base && p != filepath.Dir(p); p = filepath.Dir(p) {
		if err := os.Lchown(p, int(u.UID), int(u.GID)); err != nil {
			t.Fatal(err)
		}
	}
}

func random(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// describeTree describes everything beneath dir but skip: type, mode, owner and
// content or target.
func describeTree(t testing.TB, dir string, skip ...string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		if slices.Contains(skip, rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v uid=%d", fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid)
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += " " + string(b)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		}
		tree[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

func diffTrees(got, want map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok && !yield(k) {
				return
			}
		}
	}) {
		if got[k] != want[k] {
			fmt.Fprintf(&b, "  %s: got %q; want %q\n", k, trunc(got[k]), trunc(want[k]))
		}
	}
	return b.String()
}

func trunc(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// repoFixture builds, in s.Dir, a repository on branch feature (two
// commits past main's one, origin/feature one behind) with every kind of
// uncommitted work, and Claude Code's transcripts of it in s.Home.
// It returns the session id and the paths git ignores.
func repoFixture(t testing.TB, s Source, u *sandbox.User) (session string, ignored []string) {
	t.Helper()
	gitT(t, s, "init", "-q", "-b", "main")
	put(t, u, s.Dir, "README.md", []byte("# demo\n"), 0o644)
	put(t, u, s.Dir, "src/app.go", []byte("package main\n"), 0o644)
	put(t, u, s.Dir, "old.txt", []byte("to be deleted\n"), 0o644)
	put(t, u, s.Dir, ".gitignore", []byte("*.log\nbuild/\n"), 0o644)
	symlink(t, u, s.Dir, "readme-link", "README.md")
	gitT(t, s, "add", "-A")
	gitT(t, s, "commit", "-q", "-m", "one")
	gitT(t, s, "checkout", "-q", "-b", "feature")
	put(t, u, s.Dir, "src/app.go", []byte("package main\n\nfunc main() {}\n"), 0o644)
	put(t, u, s.Dir, "lib/util.go", []byte("package lib\n"), 0o644)
	gitT(t, s, "add", "-A")
	gitT(t, s, "commit", "-q", "-m", "two")
	gitT(t, s, "remote", "add", "origin", "https://example.invalid/demo.git")
	gitT(t, s, "update-ref", "refs/remotes/origin/feature", "HEAD~1")
	gitT(t, s, "branch", "-q", "--set-upstream-to=origin/feature")
	gitT(t, s, "tag", "v1", "HEAD~1")

	// The uncommitted work.
	put(t, u, s.Dir, "README.md", []byte("# demo\n\nchanged, not staged\n"), 0o644)
	if err := os.Remove(filepath.Join(s.Dir, "old.txt")); err != nil {
		t.Fatal(err)
	}
	put(t, u, s.Dir, "notes/todo.txt", []byte("untracked\n"), 0o644)
	put(t, u, s.Dir, "naïve file.txt", []byte("untracked, odd name\n"), 0o644)
	put(t, u, s.Dir, "run.sh", []byte("#!/bin/sh\necho hi\n"), 0o755)
	symlink(t, u, s.Dir, "latest", "notes/todo.txt")
	put(t, u, s.Dir, "staged.txt", []byte("added, staged\n"), 0o644)
	put(t, u, s.Dir, "lib/util.go", []byte("package lib // staged\n"), 0o644)
	gitT(t, s, "add", "staged.txt", "lib/util.go")
	gitT(t, s, "mv", "src/app.go", "src/main.go")
	put(t, u, s.Dir, "debug.log", []byte("ignored\n"), 0o644)
	put(t, u, s.Dir, "build/out.bin", []byte("ignored too\n"), 0o644)

	// Claude Code's transcripts of the workspace, and of another one.
	session = "0b7c2a9e-5f1d-4c3b-9a8e-1d2c3b4a5f6e"
	tdir := filepath.Join(".claude", "projects", claudeProjectDir(s.Dir))
	put(t, u, s.Home, filepath.Join(tdir, session+".jsonl"), []byte(`{"type":"user","cwd":"`+s.Dir+`"}`+"\n"), 0o600)
	put(t, u, s.Home, filepath.Join(tdir, session, "subagents", "agent-1.jsonl"), []byte("{}\n"), 0o600)
	put(t, u, s.Home, filepath.Join(tdir, "older-session.jsonl"), []byte("{}\n{}\n"), 0o600)
	if err := os.Mkdir(filepath.Join(s.Home, tdir, "memory"), 0o700); err != nil {
		t.Fatal(err)
	}
	give(t, u, s.Home, filepath.Join(tdir, "memory"))
	put(t, u, s.Home, filepath.Join(".claude", "projects", "-elsewhere", "x.jsonl"), []byte("{}\n"), 0o600)
	put(t, u, s.Home, s.SessionFile, []byte(session+"\n"), 0o600)
	return session, []string{"debug.log", "build"}
}

func TestSnapshotGitRoundTrip(t *testing.T) {
	obs := newStore(t)
	u := testUser(t)
	from := place(t, u, "ws")
	session, ignored := repoFixture(t, from, u)

	info, err := Take(t.Context(), obs, "u/proj", from)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if !info.Git || info.Branch != "feature" || info.Bundle == 0 || len(info.LeftOut) != 0 {
		t.Errorf("Take: got %+v; want git on feature, with its history, nothing left out", info)
	}
	// README.md, notes/todo.txt, naïve file.txt, run.sh, staged.txt,
	// lib/util.go, src/main.go (and the link latest); old.txt and
	// src/app.go deleted.
	if info.Files != 7 || info.Deleted != 2 || info.Transcripts != 3 {
		t.Errorf("Take: got %d files, %d deleted, %d transcripts; want 7, 2, 3", info.Files, info.Deleted, info.Transcripts)
	}

	// Another runner, another path: the workspace does not exist yet.
	to := place(t, u, "ws.restored_2")
	if err := os.Remove(to.Dir); err != nil {
		t.Fatal(err)
	}
	found, notes, err := Restore(t.Context(), obs, "u/proj", to)
	if err != nil || !found {
		t.Fatalf("Restore: found %v, err %v; want found", found, err)
	}
	t.Logf("notes: %q", notes)
	if len(notes) != 1 || !strings.Contains(notes[0], "branch feature at") || !strings.Contains(notes[0], "2 deleted file") {
		t.Errorf("notes: got %q; want one saying the branch and the deleted file", notes)
	}

	for _, args := range [][]string{
		{"status", "--porcelain=v1", "-b", "--untracked-files=all"},
		{"for-each-ref", "--format=%(refname) %(objectname)"},
		{"log", "--format=%H %s", "--all"},
		{"rev-parse", "--abbrev-ref", "HEAD"},
		{"config", "--get", "remote.origin.url"},
		{"diff", "--cached", "--stat"},
	} {
		want, got := gitT(t, from, args...), gitT(t, to, args...)
		if got != want || strings.TrimSpace(want) == "" {
			t.Errorf("git %s:\ngot  %q\nwant %q", strings.Join(args, " "), got, want)
		}
	}
	if st := gitT(t, to, "status", "--porcelain=v1", "-b"); !strings.Contains(st, "## feature...origin/feature [ahead 1]") {
		t.Errorf("status: got %q; want feature ahead of origin/feature by 1", st)
	}

	want := describeTree(t, from.Dir, append([]string{".git"}, ignored...)...)
	if d := diffTrees(describeTree(t, to.Dir, ".git"), want); d != "" {
		t.Errorf("restored workspace differs:\n%s", d)
	}
	for _, p := range ignored {
		if _, err := os.Lstat(filepath.Join(to.Dir, p)); err == nil {
			t.Errorf("ignored %s moved", p)
		}
	}
	if fi, err := os.Stat(to.Dir); err != nil || u != nil && fi.Sys().(*syscall.Stat_t).Uid != u.UID {
		t.Errorf("restored workspace: %v, %+v; want one of the agent user's", err, fi)
	}

	oldT := filepath.Join(from.Home, ".claude", "projects", claudeProjectDir(from.Dir))
	newName := claudeProjectDir(to.Dir)
	if newName == claudeProjectDir(from.Dir) {
		t.Fatalf("both workspaces' transcripts are named %s", newName)
	}
	newT := filepath.Join(to.Home, ".claude", "projects", newName)
	if d := diffTrees(describeTree(t, newT), describeTree(t, oldT)); d != "" {
		t.Errorf("transcripts under %s differ:\n%s", newT, d)
	}
	if _, err := os.Stat(filepath.Join(newT, session+".jsonl")); err != nil {
		t.Errorf("the session's transcript is not under the new name: %v", err)
	}
	if _, err := os.Stat(filepath.Join(to.Home, ".claude", "projects", "-elsewhere")); err == nil {
		t.Error("another workspace's transcripts moved")
	}
	if d := diffTrees(describeTree(t, to.Home, ".claude"), describeTree(t, from.Home, ".claude")); d != "" {
		t.Errorf("the home's session file differs:\n%s", d)
	}
}

// Repositories in other states: before the first commit (what is staged
// stays staged), and on a detached HEAD with a repository of its own,
// untracked, inside.
func TestSnapshotGitStates(t *testing.T) {
	obs := newStore(t)
	u := testUser(t)
	tests := []struct {
		name  string
		setup func(t *testing.T, s Source)
		// status is the restored one when not the same: a partly staged
		// file comes back wholly staged.
		status string
	}{
		{"no commits yet", func(t *testing.T, s Source) {
			gitT(t, s, "init", "-q", "-b", "trunk")
			put(t, u, s.Dir, "staged.txt", []byte("staged\n"), 0o644)
			put(t, u, s.Dir, "partly.txt", []byte("staged part\n"), 0o644)
			gitT(t, s, "add", "staged.txt", "partly.txt")
			put(t, u, s.Dir, "partly.txt", []byte("staged part\nand more\n"), 0o644)
			put(t, u, s.Dir, "new.txt", []byte("untracked\n"), 0o644)
		}, "## No commits yet on trunk\nA  partly.txt\nA  staged.txt\n?? new.txt\n"},
		{"detached, a repository inside", func(t *testing.T, s Source) {
			gitT(t, s, "init", "-q", "-b", "main")
			put(t, u, s.Dir, "a.txt", []byte("one\n"), 0o644)
			gitT(t, s, "add", "-A")
			gitT(t, s, "commit", "-q", "-m", "one")
			put(t, u, s.Dir, "a.txt", []byte("two\n"), 0o644)
			gitT(t, s, "commit", "-q", "-am", "two")
			gitT(t, s, "checkout", "-q", "--detach", "HEAD~1")
			put(t, u, s.Dir, "a.txt", []byte("one, changed\n"), 0o644)
			inner := s
			inner.Dir = filepath.Join(s.Dir, "vendor", "lib")
			put(t, u, s.Dir, "vendor/lib/lib.go", []byte("package lib\n"), 0o644)
			inner.Command = sandbox.CommandFunc(inner.Dir, s.Home, u, false)
			gitT(t, inner, "init", "-q", "-b", "main")
			gitT(t, inner, "add", "-A")
			gitT(t, inner, "commit", "-q", "-m", "inner")
		}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := place(t, u, "ws")
			tt.setup(t, from)
			name := fmt.Sprintf("u/s%d", i)
			if _, err := Take(t.Context(), obs, name, from); err != nil {
				t.Fatalf("Take: %v", err)
			}
			to := place(t, u, "ws2")
			if _, notes, err := Restore(t.Context(), obs, name, to); err != nil {
				t.Fatalf("Restore: %v", err)
			} else {
				t.Logf("notes: %q", notes)
			}
			for _, args := range [][]string{
				{"status", "--porcelain=v1", "-b", "--untracked-files=all"},
				{"for-each-ref", "--format=%(refname) %(objectname)"},
				{"symbolic-ref", "-q", "HEAD"},
				{"rev-parse", "-q", "--verify", "HEAD"},
			} {
				want, _ := runGit(t.Context(), from, nil, args...)
				got, _ := runGit(t.Context(), to, nil, args...)
				if args[0] == "status" && tt.status != "" {
					want = tt.status
				}
				if got != want {
					t.Errorf("git %s:\ngot  %q\nwant %q", strings.Join(args, " "), got, want)
				}
			}
			if d := diffTrees(describeTree(t, to.Dir, ".git"), describeTree(t, from.Dir, ".git")); d != "" {
				t.Errorf("restored workspace differs:\n%s", d)
			}
		})
	}
}

func TestSnapshotFolderRoundTrip(t *testing.T) {
	obs := newStore(t)
	u := testUser(t)
	from := place(t, u, "plain")
	secret := filepath.Join(t.TempDir(), "precious") // only root may read it, when root
	if err := os.WriteFile(secret, []byte("root's own secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	put(t, u, from.Dir, "a.txt", []byte("alpha\n"), 0o644)
	put(t, u, from.Dir, "deep/er/b.bin", random(3000), 0o600)
	put(t, u, from.Dir, "tool", []byte("#!/bin/sh\n"), 0o755)
	put(t, u, from.Dir, ".hidden", []byte("dot\n"), 0o644)
	if err := os.MkdirAll(filepath.Join(from.Dir, "empty", "dir"), 0o750); err != nil {
		t.Fatal(err)
	}
	give(t, u, from.Dir, "empty/dir")
	symlink(t, u, from.Dir, "rel-link", "deep/er/b.bin")
	symlink(t, u, from.Dir, "secret-link", secret)
	if err := syscall.Mkfifo(filepath.Join(from.Dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	give(t, u, from.Dir, "fifo")

	info, err := Take(t.Context(), obs, "u/default", from)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if info.Git || info.Files != 4 || len(info.LeftOut) != 0 {
		t.Errorf("Take: got %+v; want a folder of 4 files, nothing left out", info)
	}
	if raw := snapshotBytes(t, obs, "u/default"); bytes.Contains(raw, []byte("root's own secret")) {
		t.Error("the snapshot holds what a link outside the workspace points at")
	}

	to := place(t, u, "plain2") // made empty, as sandbox.PrepareWorkspace leaves it
	found, notes, err := Restore(t.Context(), obs, "u/default", to)
	if err != nil || !found {
		t.Fatalf("Restore: found %v, err %v", found, err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "a folder of 4 files") {
		t.Errorf("notes: got %q; want one saying a folder of 4 files", notes)
	}
	if d := diffTrees(describeTree(t, to.Dir), describeTree(t, from.Dir, "fifo")); d != "" {
		t.Errorf("restored folder differs:\n%s", d)
	}
}

// snapshotBytes is the archive obs holds under name, uncompressed.
func snapshotBytes(t testing.TB, obs jetstream.ObjectStore, name string) []byte {
	t.Helper()
	b, err := obs.GetBytes(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Over the cap: the history goes first when the remote has it, then the
// largest files; the notes say what did not move.
func TestSnapshotCap(t *testing.T) {
	obs := newStore(t)
	u := testUser(t)
	from := place(t, u, "ws")
	remote := filepath.Join(filepath.Dir(from.Dir), "remote.git")
	if err := os.Mkdir(remote, 0o755); err != nil {
		t.Fatal(err)
	}
	give(t, u, filepath.Dir(remote), "remote.git")
	url := "file://" + remote
	gitT(t, from, "init", "-q", "--bare", remote)
	gitT(t, from, "init", "-q", "-b", "main")
	put(t, u, from.Dir, "history.bin", random(96<<10), 0o644)
	gitT(t, from, "add", "-A")
	gitT(t, from, "commit", "-q", "-m", "one")
	gitT(t, from, "remote", "add", "origin", url)
	gitT(t, from, "push", "-q", "origin", "main")
	gitT(t, from, "checkout", "-q", "-b", "feature")
	put(t, u, from.Dir, "f.txt", []byte("two\n"), 0o644)
	gitT(t, from, "add", "-A")
	gitT(t, from, "commit", "-q", "-m", "two")
	gitT(t, from, "push", "-q", "-u", "origin", "feature")
	pushed := strings.TrimSpace(gitT(t, from, "rev-parse", "HEAD"))
	put(t, u, from.Dir, "f.txt", []byte("three\n"), 0o644)
	gitT(t, from, "commit", "-q", "-am", "three, not pushed")
	local := strings.TrimSpace(gitT(t, from, "rev-parse", "HEAD"))
	put(t, u, from.Dir, "big.bin", random(64<<10), 0o644)
	put(t, u, from.Dir, "mid.bin", random(32<<10), 0o644)
	put(t, u, from.Dir, "small.txt", []byte("small\n"), 0o644)

	all, err := Take(t.Context(), obs, "u/all", from)
	if err != nil {
		t.Fatal(err)
	}
	if all.Bundle < 96<<10 || len(all.LeftOut) != 0 {
		t.Fatalf("without a cap: got %+v; want the history (≥ 96 KB) and everything in", all)
	}
	tests := []struct {
		name        string
		url         string
		max         int64
		wantHistory bool
		wantHead    string
		wantNotes   []string
	}{
		{
			name: "history fetched again", url: url, max: 40 << 10, wantHead: pushed,
			wantNotes: []string{
				"Not moved (over the 40 KB limit): the repository's history (",
				"it was fetched again from " + url,
				"Not moved (over the 40 KB limit): big.bin (64 KB).",
				"Commits not pushed to " + url + " did not move: feature was at " + local[:8] + ", it is at " + pushed[:8],
			},
		},
		{
			name: "no remote to fetch from", url: "", max: all.Bundle + 40<<10, wantHistory: true, wantHead: local,
			wantNotes: []string{"Not moved (over the " + sizeText(all.Bundle+40<<10) + " limit): big.bin (64 KB)."},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := from
			src.URL, src.Max = tt.url, tt.max
			name := fmt.Sprintf("u/p%d", i)
			info, err := Take(t.Context(), obs, name, src)
			if err != nil {
				t.Fatalf("Take: %v (the cap must never fail it)", err)
			}
			if got := info.Bundle > 0; got != tt.wantHistory {
				t.Errorf("history kept: got %v; want %v", got, tt.wantHistory)
			}
			if info.Raw > tt.max {
				t.Errorf("archive: got %d bytes; want at most the cap, %d", info.Raw, tt.max)
			}
			to := place(t, u, "ws2")
			to.URL = tt.url
			found, notes, err := Restore(t.Context(), obs, name, to)
			if err != nil || !found {
				t.Fatalf("Restore: found %v, err %v", found, err)
			}
			t.Logf("notes: %q", notes)
			all := strings.Join(notes, "\n")
			for _, w := range tt.wantNotes {
				if !strings.Contains(all, w) {
					t.Errorf("notes: got %q; want one saying %q", notes, w)
				}
			}
			if strings.Contains(all, "mid.bin") || strings.Contains(all, "small.txt") {
				t.Errorf("notes: got %q; want mid.bin and small.txt moved", notes)
			}
			if head := strings.TrimSpace(gitT(t, to, "rev-parse", "HEAD")); head != tt.wantHead {
				t.Errorf("HEAD: got %s; want %s", head, tt.wantHead)
			}
			if b := gitT(t, to, "rev-parse", "--abbrev-ref", "HEAD"); strings.TrimSpace(b) != "feature" {
				t.Errorf("branch: got %q; want feature", b)
			}
			for f, want := range map[string]bool{"big.bin": false, "mid.bin": true, "small.txt": true, "history.bin": true} {
				if _, err := os.Stat(filepath.Join(to.Dir, f)); (err == nil) != want {
					t.Errorf("%s there: got %v; want %v", f, err == nil, want)
				}
			}
		})
	}
}

// The order things are left out in, without git or a server.
func TestSnapshotPlan(t *testing.T) {
	reg := func(name string, size int64) *entry {
		return &entry{name: name, size: size, mode: 0o644}
	}
	tests := []struct {
		name string
		url  string
		max  int64
		want []string // left out, in order
	}{
		{"everything fits", "", 1 << 20, nil},
		{"history first, when fetchable", "https://x/y.git", 80_000, []string{"history:"}},
		{"then the largest files", "https://x/y.git", 44_000, []string{"history:", "file:big", "file:mid"}},
		{"files before history without a remote", "", 85_000, []string{"file:big", "file:mid"}},
		{"then other transcripts, the current last", "", 77_000, []string{"file:big", "file:mid", "file:small", "transcript:old.jsonl"}},
		{"history last of all", "", 10_000, []string{"file:big", "file:mid", "file:small", "transcript:old.jsonl", "transcript:cur.jsonl", "history:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := &manifest{V: 1, Git: true, URL: tt.url, Max: tt.max}
			bundle := reg(entryBundle, 40_000)
			files := []*entry{reg(entryFiles+"small", 2_000), reg(entryFiles+"big", 20_000), reg(entryFiles+"mid", 9_000),
				{name: entryFiles + "dir", mode: fs.ModeDir | 0o755}}
			cur := reg(entryClaude+"cur.jsonl", 30_000)
			cur.current = true
			entries, _ := plan(meta, bundle, files, []*entry{cur, reg(entryClaude+"old.jsonl", 5_000)}, []byte("id\n"))
			var got []string
			for _, l := range meta.LeftOut {
				got = append(got, l.What+":"+l.Path)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("left out: got %q; want %q", got, tt.want)
			}
			if len(entries)+len(got) != 7 {
				t.Errorf("entries: got %d kept and %d left out; want 7 in all", len(entries), len(got))
			}
		})
	}
}

// A file that grows past the cap between planning and writing is left out,
// and the restore says so.
func TestSnapshotChangedWhileTaken(t *testing.T) {
	obs := newStore(t)
	u := testUser(t)
	from := place(t, u, "plain")
	put(t, u, from.Dir, "grows.txt", []byte("small\n"), 0o644)
	put(t, u, from.Dir, "stays.txt", []byte("stays\n"), 0o644)
	dir, err := os.OpenRoot(from.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	files, err := walk(dir, ".", entryFiles)
	if err != nil {
		t.Fatal(err)
	}
	meta := &manifest{V: version, Dir: from.Dir, Max: 16 << 10}
	entries, slack := plan(meta, nil, files, nil, nil)
	put(t, u, from.Dir, "grows.txt", random(int(slack)+1024), 0o644)
	var buf bytes.Buffer
	late, _, err := writeArchive(&buf, meta, entries, nil, slack)
	if err != nil {
		t.Fatalf("writeArchive: %v", err)
	}
	if len(late) != 1 || late[0].Path != "grows.txt" || late[0].Why != whyChanged {
		t.Errorf("left out while writing: got %+v; want grows.txt, changed", late)
	}
	if _, err := obs.PutBytes(t.Context(), "u/default", buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	to := place(t, u, "plain2")
	_, notes, err := Restore(t.Context(), obs, "u/default", to)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(notes, "Not moved (it changed while the snapshot was taken): grows.txt.") {
		t.Errorf("notes: got %q; want grows.txt said changed", notes)
	}
	if _, err := os.Stat(filepath.Join(to.Dir, "grows.txt")); err == nil {
		t.Error("grows.txt restored")
	}
	if b, _ := os.ReadFile(filepath.Join(to.Dir, "stays.txt")); string(b) != "stays\n" {
		t.Errorf("stays.txt: got %q", b)
	}
}

// craft is a snapshot archive made by hand: meta first, then entries
// (regular files hold "escaped\n", or their Linkname when set).
func craft(t testing.TB, meta manifest, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	mj, _ := json.Marshal(meta)
	if err := tarBytes(tw, entryManifest, mj); err != nil {
		t.Fatal(err)
	}
	for _, h := range entries {
		content := []byte("escaped\n")
		if h.Typeflag == tar.TypeReg {
			if h.Linkname != "" {
				content, h.Linkname = []byte(h.Linkname), ""
			}
			h.Size = int64(len(content))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write(content)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A snapshot trying to write outside the workspace or the transcripts'
// directory is refused, and nothing lands outside.
func TestSnapshotRefusesEscape(t *testing.T) {
	obs := newStore(t)
	u := testUser(t)
	plain := manifest{V: version, Max: 1 << 20}
	reg := func(name string) *tar.Header { return &tar.Header{Name: name, Typeflag: tar.TypeReg} }
	tests := []struct {
		name    string
		meta    manifest
		entries []*tar.Header
		prepare func(t *testing.T, s Source, outside string)
	}{
		{name: "dot dot", meta: plain, entries: []*tar.Header{reg("files/../escaped")}},
		{name: "dot dot inside", meta: plain, entries: []*tar.Header{reg("files/a/../../escaped")}},
		{name: "absolute", meta: plain, entries: []*tar.Header{reg("files//tmp/escaped")}},
		{name: "transcript above its directory", meta: plain, entries: []*tar.Header{reg("claude/../../../escaped")}},
		{name: "through a link of its own", meta: plain, entries: []*tar.Header{
			{Name: "files/out", Typeflag: tar.TypeSymlink, Linkname: ".."}, reg("files/out/escaped"),
		}},
		{name: "hard link", meta: plain, entries: []*tar.Header{{Name: "files/h", Typeflag: tar.TypeLink, Linkname: "/etc/passwd"}}},
		{name: "device", meta: plain, entries: []*tar.Header{{Name: "files/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}},
		{name: "deleting outside", meta: manifest{V: version, Max: 1 << 20, Deleted: []string{"../victim"}}},
		{name: "session id", meta: plain, entries: []*tar.Header{{Name: "session", Typeflag: tar.TypeReg, Linkname: "../../x\n"}}},
		{name: "unknown entry", meta: plain, entries: []*tar.Header{reg("escaped")}},
		{
			name: "through a link the home has", meta: plain, entries: []*tar.Header{reg("claude/escaped")},
			prepare: func(t *testing.T, s Source, outside string) {
				symlink(t, u, s.Home, ".claude", outside)
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := place(t, u, "ws")
			parent := filepath.Dir(s.Dir)
			outside := filepath.Join(parent, "outside")
			if err := os.Mkdir(outside, 0o777); err != nil { // writable by the agent user too
				t.Fatal(err)
			}
			if err := os.Chmod(outside, 0o777); err != nil {
				t.Fatal(err)
			}
			put(t, nil, parent, "victim", []byte("keep me\n"), 0o666)
			if tt.prepare != nil {
				tt.prepare(t, s, outside)
			}
			before := describeTree(t, parent, "ws", "home")
			name := fmt.Sprintf("u/e%d", i)
			if _, err := obs.PutBytes(t.Context(), name, craft(t, tt.meta, tt.entries...)); err != nil {
				t.Fatal(err)
			}
			found, _, err := Restore(t.Context(), obs, name, s)
			if !found || !errors.Is(err, ErrInvalid) {
				t.Errorf("Restore: found %v, err %v; want found, %v", found, err, ErrInvalid)
			}
			if d := diffTrees(describeTree(t, parent, "ws", "home"), before); d != "" {
				t.Errorf("written outside the workspace and home:\n%s", d)
			}
			if names, _ := os.ReadDir(s.Dir); len(names) != 0 {
				t.Errorf("workspace after a refused restore: got %v; want it empty", names)
			}
		})
	}
}

func TestSnapshotMissing(t *testing.T) {
	obs := newStore(t)
	s := place(t, testUser(t), "ws")
	if err := os.Remove(s.Dir); err != nil {
		t.Fatal(err)
	}
	found, notes, err := Restore(t.Context(), obs, "nobody/default", s)
	if found || notes != nil || err != nil {
		t.Errorf("Restore: got %v, %q, %v; want not found, no notes, no error", found, notes, err)
	}
	if _, err := os.Lstat(s.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("workspace made without a snapshot: %v", err)
	}
}

// A snapshot is restored into an empty or missing workspace only.
func TestSnapshotNotEmpty(t *testing.T) {
	obs := newStore(t)
	u := testUser(t)
	s := place(t, u, "ws")
	put(t, u, s.Dir, "a.txt", []byte("from the snapshot\n"), 0o644)
	if _, err := Take(t.Context(), obs, "u/default", s); err != nil {
		t.Fatal(err)
	}
	put(t, u, s.Dir, "a.txt", []byte("there already\n"), 0o644)
	found, _, err := Restore(t.Context(), obs, "u/default", s)
	if !found || !errors.Is(err, ErrNotEmpty) {
		t.Errorf("Restore: found %v, err %v; want found, %v", found, err, ErrNotEmpty)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Dir, "a.txt")); string(b) != "there already\n" {
		t.Errorf("a.txt: got %q; want it untouched", b)
	}
}

// A later snapshot replaces the earlier one, and the object says what it
// holds.
func TestSnapshotReplaces(t *testing.T) {
	obs := newStore(t)
	u := testUser(t)
	s := place(t, u, "ws")
	for _, text := range []string{"first\n", "second\n"} {
		put(t, u, s.Dir, "a.txt", []byte(text), 0o644)
		if _, err := Take(t.Context(), obs, "u/default", s); err != nil {
			t.Fatal(err)
		}
	}
	infos, err := obs.List(t.Context())
	if err != nil || len(infos) != 1 {
		t.Fatalf("objects: got %d (%v); want 1", len(infos), err)
	}
	if d := infos[0].Description; !strings.Contains(d, "folder; 1 file, 7 bytes") {
		t.Errorf("description: got %q; want the folder's files and bytes", d)
	}
	if m := infos[0].Metadata; m["kind"] != "folder" || m["files"] != "1" {
		t.Errorf("metadata: got %v; want kind folder, 1 file", m)
	}
	to := place(t, u, "ws2")
	if _, _, err := Restore(t.Context(), obs, "u/default", to); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(to.Dir, "a.txt")); string(b) != "second\n" {
		t.Errorf("a.txt: got %q; want the later snapshot's", b)
	}
}

// The names Claude Code 2.1.330 gave these working directories' session
// directories (run in a test home, November 2026).
func TestSnapshotClaudeProjectDir(t *testing.T) {
	tests := []struct{ dir, want string }{
		{"/tmp/probe-ws/my.ws_x y-é", "-tmp-probe-ws-my-ws-x-y--"},
		{"/tmp/probe-ws/real", "-tmp-probe-ws-real"},
		{"/tmp/probe-ws/" + strings.Repeat("long_dir.", 25), "-tmp-probe-ws-" + strings.Repeat("long-dir-", 20) + "long-d-4x1raj"},
	}
	for _, tt := range tests {
		if got := claudeProjectDir(tt.dir); got != tt.want {
			t.Errorf("claudeProjectDir(%q):\ngot  %q\nwant %q", tt.dir, got, tt.want)
		}
	}
}

// The real CLI resumes, in the restored workspace, the session it had in
// the first: by id, as the runner does (Claude Code 2.1.330 finds an id in
// any workspace's directory), and with --continue, which looks in the
// current workspace's directory only: the transcript is where it looks.
func TestSnapshotClaudeResumes(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t, claudetest.Text("first answer"), claudetest.Text("second answer"), claudetest.Text("third answer"))
	claudetest.Setenv(t, m)
	obs := newStore(t)
	u := testUser(t)
	claude := func(s Source, args ...string) {
		t.Helper()
		s.Command = sandbox.CommandFunc(s.Dir, s.Home, u, true)
		cmd := s.Command(t.Context(), bin, append([]string{"-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}, args...)...)
		out, err := cmd.CombinedOutput()
		sandbox.EndGroup(cmd)
		if err != nil || !bytes.Contains(out, []byte(`"type":"result"`)) {
			t.Fatalf("claude %v: %v\n%s", args, err, out)
		}
	}
	id := "3f2a1b0c-9d8e-4f7a-8b6c-5d4e3f2a1b0c"
	from := place(t, u, "ws")
	claude(from, "--session-id", id, "hello")
	put(t, u, from.Home, from.SessionFile, []byte(id+"\n"), 0o600)
	if _, err := Take(t.Context(), obs, "u/default", from); err != nil {
		t.Fatal(err)
	}
	to := place(t, u, "elsewhere")
	if _, _, err := Restore(t.Context(), obs, "u/default", to); err != nil {
		t.Fatal(err)
	}
	claude(to, "--resume", id, "again")
	claude(to, "--continue", "and again")
	reqs := m.MainRequests()
	if len(reqs) != 3 {
		t.Fatalf("main requests: got %d; want 3", len(reqs))
	}
	for i, want := range []string{"", "first answer", "second answer"} {
		var earlier bool
		for _, msg := range reqs[i].Messages {
			for _, b := range msg.Content {
				earlier = earlier || msg.Role == "assistant" && strings.Contains(b.Text, want)
			}
		}
		if i > 0 && !earlier {
			t.Errorf("request %d: got %+v; want the conversation so far, %q in it", i, reqs[i].Messages, want)
		}
	}
}

// BenchmarkSnapshotSmallRepo takes and restores the round trip's
// repository (a few files, two commits, three transcripts).
func BenchmarkSnapshotSmallRepo(b *testing.B) {
	obs := newStore(b)
	u := testUser(b)
	from := place(b, u, "ws")
	repoFixture(b, from, u)
	var info Info
	b.Run("take", func(b *testing.B) {
		for b.Loop() {
			var err error
			if info, err = Take(b.Context(), obs, "u/proj", from); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(info.Size), "object-bytes")
		b.ReportMetric(float64(info.Raw), "raw-bytes")
	})
	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			to := place(b, u, "ws2")
			b.StartTimer()
			if _, _, err := Restore(b.Context(), obs, "u/proj", to); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A workspace reached by a link (a person's directory kept on a disk of
// their own: the link leads to it on the host, a sandbox binds it at the
// link's own path), empty when restored into: the restore takes where the
// link leads for the workspace, and the agent's transcripts are found and
// put under the name of the workspace as the agent sees it (Seen), not as
// the link resolves on the host.
func TestSnapshotThroughALink(t *testing.T) {
	obs := newStore(t)
	u := testUser(t)
	linked := func(name string) Source {
		t.Helper()
		s := place(t, u, name+".disk")
		link := filepath.Join(filepath.Dir(s.Dir), name)
		if err := os.Symlink(filepath.Base(s.Dir), link); err != nil {
			t.Fatal(err)
		}
		s.Dir, s.Seen = link, "/seen/as/"+name
		s.Command = sandbox.CommandFunc(link, s.Home, u, false)
		return s
	}
	from := linked("ws")
	put(t, u, from.Dir, "note.txt", []byte("kept\n"), 0o644)
	session := "5d1e0f6a-2b3c-4d5e-8f90-a1b2c3d4e5f6"
	tdir := filepath.Join(".claude", "projects", claudeProjectDir(from.Seen))
	put(t, u, from.Home, filepath.Join(tdir, session+".jsonl"), []byte("{}\n"), 0o600)
	put(t, u, from.Home, from.SessionFile, []byte(session+"\n"), 0o600)
	info, err := Take(t.Context(), obs, "u/linked", from)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if info.Files != 1 || info.Transcripts != 1 {
		t.Errorf("Take: %d files, %d transcripts; want 1 and 1 (found by the name the agent sees)", info.Files, info.Transcripts)
	}

	to := linked("ws2")
	if found, _, err := Restore(t.Context(), obs, "u/linked", to); err != nil || !found {
		t.Fatalf("Restore into a link to an empty workspace: found %v, %v", found, err)
	}
	if b, err := os.ReadFile(filepath.Join(to.Dir, "note.txt")); err != nil || string(b) != "kept\n" {
		t.Errorf("note.txt restored: %q, %v", b, err)
	}
	if fi, err := os.Lstat(to.Dir); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the workspace after the restore: %v, %v; want the link still", fi, err)
	}
	got := filepath.Join(to.Home, ".claude", "projects", claudeProjectDir(to.Seen), session+".jsonl")
	if _, err := os.Stat(got); err != nil {
		t.Errorf("the session's transcript under the name the agent sees: %v", err)
	}
}
