package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// diffKeep is how much of the diff an approval request quotes as text
// (when it cannot be shown as an image).
const diffKeep = 3000

// untrackedDiffs is how many new files the diff shows in full.
const untrackedDiffs = 20

// Changes are the uncommitted changes in a workspace's git repository.
type Changes struct {
	// Summary heads an approval request: files with lines added and
	// removed. Empty when the workspace is not a repository or has no
	// changes.
	Summary string
	// Diff is the unified diff (at most 1 MB), new files included.
	Diff string
}

// Text is the summary with the diff quoted, cut at diffKeep.
func (c Changes) Text() string {
	if c.Summary == "" {
		return ""
	}
	diff := c.Diff
	if len(diff) > diffKeep {
		diff = strings.ToValidUTF8(diff[:diffKeep], "") + "\n[…]"
	}
	if diff = strings.TrimSpace(diff); diff != "" {
		return c.Summary + "\n" + diff + "\n\n"
	}
	return c.Summary + "\n"
}

// Pending looks for uncommitted changes in the git repository of the
// run's directory, for an approval request.
func Pending(ctx context.Context, r *agent.Run) (Changes, error) {
	git := func(args ...string) (string, error) {
		cmd := r.Command(ctx, "git", args...)
		out := &output.CappedBuffer{Max: 1 << 20}
		cmd.Stdout = out
		err := cmd.Run()
		sandbox.EndGroup(cmd)
		return out.String(), err
	}
	// Not a repository: nothing to approve. (Only the workspace's own:
	// a repository around the workspaces directory is not the person's.)
	if _, err := os.Stat(filepath.Join(r.Dir, ".git")); err != nil {
		return Changes{}, nil
	}
	status, err := git("status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return Changes{}, fmt.Errorf("git status: %w", err)
	}
	if strings.TrimSpace(status) == "" {
		return Changes{}, nil
	}
	// Lines added and removed per tracked file; a repository without
	// commits diffs against the empty tree.
	base := "HEAD"
	if _, err := git("rev-parse", "--verify", "-q", "HEAD"); err != nil {
		base = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	}
	numstat, _ := git("diff", "--numstat", base)
	counts := map[string][2]string{}
	for _, line := range strings.Split(strings.TrimSpace(numstat), "\n") {
		if f := strings.SplitN(line, "\t", 3); len(f) == 3 {
			counts[f[2]] = [2]string{f[0], f[1]}
		}
	}
	var b strings.Builder
	var files, added, removed int
	var untracked []string
	for _, line := range strings.Split(strings.TrimRight(status, "\n"), "\n") {
		if len(line) < 4 {
			continue
		}
		code, path := strings.TrimSpace(line[:2]), line[3:]
		files++
		if code == "??" { // untracked: git diff does not count it
			code = "A"
			untracked = append(untracked, path)
			if data, err := sandbox.ReadBeneath(r.Dir, path, 1<<20); err == nil {
				counts[path] = [2]string{strconv.Itoa(strings.Count(string(data), "\n")), "0"}
			}
		}
		c := counts[path]
		a, _ := strconv.Atoi(c[0]) // "-" for binary files: 0
		d, _ := strconv.Atoi(c[1])
		added, removed = added+a, removed+d
		fmt.Fprintf(&b, "  %s %s (+%d −%d)\n", code, path, a, d)
	}
	diff, _ := git("diff", base)
	for _, path := range untracked[:min(len(untracked), untrackedDiffs)] {
		// Exits 1 when the files differ, which they do.
		d, _ := git("diff", "--no-index", "--", "/dev/null", path)
		diff += d
	}
	head := fmt.Sprintf("Changes waiting for your approval: %s, +%d −%d\n", contract.Plural(files, "file"), added, removed)
	return Changes{Summary: head + b.String(), Diff: diff}, nil
}
