package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// Branches: with the person's "branches on", each message job
// comes with contract.Job.Worktree and runs in a git worktree of its
// project, on a branch of its own, textslash/<id>, made from the
// checkout's HEAD: the checkout, and whatever the person has under way in
// it, is left as it was. approve commits the worktree's changes on the
// branch and merges it into the checkout's branch; reject deletes the
// worktree and the branch.
//
// Each project has at most one worktree, always at the same place,
// <Root>/.worktrees/<user key>/<project name> (outside every
// checkout, so a checkout's status never shows it): the branch in
// progress. Git's own list of worktrees is what tells it is there and on
// which branch. A message while it is there — its approval request not
// answered yet, or its run cancelled, timed out or failed with changes
// left — goes on on that branch, as a message goes on with the changes
// left in a checkout; a run that leaves it without changes (and without
// commits) removes it and its branch at once. The same place from one
// branch to the next lets an agent that keeps its conversations by
// directory (Claude Code) go on with it.
//
// approve and reject act on the worktree only when the approval request
// they answer was about its branch: a file in the agent's home
// (worktreeFileOf) names that branch from the request on; an approval
// request about changes in the checkout (a message with branches off)
// removes it, and approve and reject act on the checkout as they always
// did.
//
// Git runs as the agent user, through the run's command function, so in
// the run's sandbox when there is one. The worktree's .git is a file
// naming a directory in the checkout's .git, where git also keeps the
// worktree's index and the branch: a run in the worktree sees the
// checkout's git directory read-write (not its files); the runner's own
// git in the checkout (adding, merging, removing the worktree) sees the
// person's worktrees directory read-write.

// worktreeFile in the agent's home names the branch whose approval
// request is open in the default project; worktreeFile.<name> in project
// name (worktreeFileOf).
const worktreeFile = ".textslash-worktree"

// branchPrefix starts every branch textslash makes.
const branchPrefix = "textslash/"

// Texts the person reads about branches.
const (
	// With the project's name.
	MsgNotOnBranch = "Not on a branch of its own: %s is not a git repository with a commit."
	// With git's line of error.
	MsgNoWorktree = "Not run: this message could not have a branch of its own (%s). Reply branches off to work in the project's checkout."
	// With the branch and what approve merges it into.
	MsgApproveBranch = "The changes are on branch %s; your checkout is untouched. Reply approve to merge them into %s, or reject to delete the branch."
	// With how many files, the branch and the checkout's branch.
	MsgMerged = "Merged the changes to %s from branch %s into %s."
	// With how many files, the branch and why it was not merged.
	MsgBranchKept = "Committed the changes to %s on branch %s (kept: %s)."
	// With the branch and how many files.
	MsgBranchDiscarded = "Discarded branch %s (%s); your checkout is untouched."
	// With the branch.
	MsgBranchGone = "Nothing waits on branch %s any more: it has no changes, or it is gone."
)

// Worktree is a project's worktree: the one a message runs in, or the one
// an answer to its approval request acts on.
type Worktree struct {
	checkout string // the project's checkout
	dir      string // the worktree
	branch   string // its branch, textslash/<id>
	// present: dir is a worktree on branch (an answer may find only the
	// branch).
	present bool
	// binds are the directories the job's sandbox also binds read-write:
	// the checkout's git directory for a message's run in dir; the
	// person's worktrees directory (dir's parent) for an answer, run in
	// the checkout.
	binds []string
	// git runs the runner's own git in the checkout, as the agent user,
	// sandboxed seeing dir's parent too.
	git gitFunc
}

// gitFunc runs git with args and returns its output (stdout and stderr),
// also when it fails.
type gitFunc func(ctx context.Context, args ...string) (string, error)

// gitTimeout bounds each git the runner runs on its own (a hook of the
// repository's may hang), outside a run's deadline.
const gitTimeout = 5 * time.Minute

// gitWith is a gitFunc running git through command (an agent.Run.Command) with
// textslash's identity as committer, for at most gitTimeout.
func gitWith(command func(ctx context.Context, name string, args ...string) *exec.Cmd) gitFunc {
	return func(ctx context.Context, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, gitTimeout)
		defer cancel()
		cmd := command(ctx, "git", append(slices.Clip(gitIdentity), args...)...)
		out := &output.CappedBuffer{Max: 64 << 10}
		cmd.Stdout, cmd.Stderr = out, out
		err := cmd.Run()
		sandbox.EndGroup(cmd)
		text := strings.TrimSpace(out.String())
		if err != nil {
			return text, fmt.Errorf("git %s: %w: %s", strings.Join(args[:min(len(args), 3)], " "), err, text)
		}
		return text, nil
	}
}

// worktreeDir is where u's project ("" the default) has its worktree.
func (w *Workspaces) worktreeDir(u contract.User, project string) string {
	return filepath.Join(w.Root, worktreesDir, u.Key(), contract.ProjectOf(project))
}

// worktreeFileOf is the file in the agent's home naming the branch of
// project's open approval request.
func worktreeFileOf(project string) string {
	return worktreeFile + "." + contract.ProjectOf(project)
}

// Sandbox is box for the job w belongs to (w nil: box): it also binds,
// read-write, what the job needs of the checkout or the worktrees.
func (w *Worktree) Sandbox(box *sandbox.Sandbox) *sandbox.Sandbox {
	if w == nil {
		return box
	}
	return withWritable(box, w.binds...)
}

// Dir is where the worktree is (a message's run works there).
func (w *Worktree) Dir() string { return w.dir }

// Branch is the worktree's branch, textslash/<id>.
func (w *Worktree) Branch() string { return w.branch }

// OpenWorktree readies the worktree of job, if it has one (nil when
// not): for a message with Worktree, the project's branch in progress or
// a new one (note says why there is none: the checkout is not a
// repository with a commit); for approve or reject, the one their
// approval request was about. An error ends the job: the worktree could
// not be made (a *Refusal says why, for the person).
func (ws *Workspaces) OpenWorktree(ctx context.Context, job contract.Job, project, checkout, home string) (w *Worktree, note string, err error) {
	log := *zerolog.Ctx(ctx)
	dir := ws.worktreeDir(job.User, project)
	w = &Worktree{checkout: checkout, dir: dir}
	switch job.Action {
	case "":
		if !job.Worktree {
			return nil, "", nil
		}
	case contract.ActionApprove, contract.ActionReject:
		b, err := sandbox.ReadBeneath(home, worktreeFileOf(project), 512)
		if err != nil {
			return nil, "", nil // the request was about the checkout
		}
		if w.branch = strings.TrimSpace(string(b)); !branchRE.MatchString(w.branch) {
			log.Warn().Str("file", worktreeFileOf(project)).Msg("no branch in the note of the approval request's; acting on the checkout")
			return nil, "", nil
		}
	default:
		return nil, "", nil
	}
	if err := sandbox.PrepareWorkspace(filepath.Dir(dir), home, ws.User); err != nil {
		return nil, "", fmt.Errorf("worktrees directory: %w", err)
	}
	w.git = gitWith(ws.gitCommand(checkout, home, filepath.Dir(dir)))
	if job.Action != "" {
		// The answer runs in the checkout and sees the worktree.
		w.binds = []string{filepath.Dir(dir)}
		branch, _, err := w.inProgress(ctx)
		if err != nil {
			log.Warn().Err(err).Msg("worktrees of the checkout")
		}
		w.present = branch == w.branch
		return w, "", nil
	}
	if _, err := os.Lstat(filepath.Join(checkout, ".git")); err != nil {
		return nil, fmt.Sprintf(MsgNotOnBranch, contract.ProjectOf(project)), nil
	}
	if _, err := w.git(ctx, "rev-parse", "-q", "--verify", "HEAD^{commit}"); err != nil {
		return nil, fmt.Sprintf(MsgNotOnBranch, contract.ProjectOf(project)), nil
	}
	// The run in the worktree sees the checkout's git directory.
	gitDir, err := w.git(ctx, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err == nil && !filepath.IsAbs(gitDir) {
		err = fmt.Errorf("not an absolute path: %q", gitDir)
	}
	if err != nil {
		return nil, "", fmt.Errorf("git directory of the checkout: %w", err)
	}
	w.binds = []string{gitDir}
	branch, registered, err := w.inProgress(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("worktrees of the checkout: %w", err)
	}
	if branch != "" {
		w.branch, w.present = branch, true
		log.Info().Str("branch", branch).Msg("the message goes on on the project's branch in progress")
		return w, "", nil
	}
	if err := w.add(ctx, job.ID, registered); err != nil {
		return nil, "", err
	}
	return w, "", nil
}

// add makes the worktree of job id's message on a new branch from the
// checkout's HEAD, once what is in its way is removed (registered: git
// lists a worktree there). A *Refusal says why it could not.
func (w *Worktree) add(ctx context.Context, id string, registered bool) error {
	log := *zerolog.Ctx(ctx)
	if registered {
		// Not one to go on with (git made it only in part, it is on
		// another branch, or its directory is gone): out of the way.
		log.Warn().Str("dir", w.dir).Msg("worktree in the way removed")
		_ = w.remove(ctx, true)
	} else if _, err := os.Lstat(w.dir); !errors.Is(err, fs.ErrNotExist) {
		log.Warn().Str("dir", w.dir).Msg("leftover directory where the worktree goes removed")
		if err := os.RemoveAll(w.dir); err != nil {
			log.Error().Err(err).Msg("leftover not removed")
		}
	}
	w.branch = branchPrefix + worktreeID(id)
	if out, err := w.git(ctx, "worktree", "add", "-q", "-b", w.branch, w.dir, "HEAD"); err != nil {
		log.Error().Err(err).Str("branch", w.branch).Msg("git worktree add")
		_, _ = w.git(ctx, "worktree", "prune")
		line := gitError(out)
		if line == "" {
			line = "git worktree add failed"
		}
		return refuse(MsgNoWorktree, line)
	}
	w.present = true
	log.Info().Str("branch", w.branch).Str("dir", w.dir).Msg("worktree made")
	return nil
}

// branchRE: a branch textslash makes.
var branchRE = regexp.MustCompile(`^textslash/[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// worktreeID is the id in the branch of job id: shortID, with any
// character a branch name could not take (or the file naming it could
// hold) made a -.
func worktreeID(id string) string {
	b := []byte(shortID(id))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) == 0 || b[0] == '-' || b[0] == '_' {
		return "x" + string(b)
	}
	return string(b)
}

// inProgress reads git's list of the checkout's worktrees: branch is the
// branch of w.dir when it is a whole worktree there on a textslash branch
// (one to go on with), registered whether git lists w.dir at all.
func (w *Worktree) inProgress(ctx context.Context) (branch string, registered bool, err error) {
	out, err := w.git(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return "", false, err
	}
	for _, block := range strings.Split(out, "\n\n") {
		var path, head string
		whole := true
		for _, line := range strings.Split(block, "\n") {
			key, val, _ := strings.Cut(line, " ")
			switch key {
			case "worktree":
				path = val
			case "branch":
				head = strings.TrimPrefix(val, "refs/heads/")
			case "locked", "prunable":
				// Locked: git add did not finish ("initializing").
				whole = false
			}
		}
		if path == "" || !samePath(path, w.dir) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(w.dir, ".git")); err != nil {
			whole = false
		}
		if whole && branchRE.MatchString(head) {
			return head, true, nil
		}
		return "", true, nil
	}
	return "", false, nil
}

// samePath reports whether a and b name the same directory, links
// resolved.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// remove removes the worktree (force: whatever it holds) and has git
// forget it; its branch stays.
func (w *Worktree) remove(ctx context.Context, force bool) error {
	log := *zerolog.Ctx(ctx)
	args := []string{"worktree", "remove", w.dir}
	if force {
		args = []string{"worktree", "remove", "-f", "-f", w.dir}
	}
	_, err := w.git(ctx, args...)
	if err != nil && force {
		// Whatever git could not remove (a directory it no longer knows).
		if rerr := os.RemoveAll(w.dir); rerr != nil {
			log.Error().Err(rerr).Str("dir", w.dir).Msg("worktree not removed")
			return rerr
		}
		err = nil
	}
	if _, perr := w.git(ctx, "worktree", "prune"); perr != nil {
		log.Warn().Err(perr).Msg("git worktree prune")
	}
	return err
}

// changed lists the files the branch changes: those changed in the
// worktree, uncommitted, and those its commits changed since it left the
// checkout's HEAD.
func (w *Worktree) changed(ctx context.Context, git gitFunc) ([]string, error) {
	var files []string
	if w.present {
		out, err := git(ctx, "-C", w.dir, "status", "--porcelain", "--untracked-files=all")
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(out, "\n") {
			if len(line) > 3 {
				files = append(files, line[3:])
			}
		}
	}
	out, err := git(ctx, "diff", "--name-only", "HEAD..."+w.branch, "--")
	if err != nil {
		return nil, err
	}
	for _, f := range strings.Split(out, "\n") {
		if f != "" && !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	return files, nil
}

// Settle is called after a message's run in the worktree, however it
// ended: a worktree holding changes (or commits) stays, the branch in
// progress; one holding none is removed with its branch. It reports
// whether the worktree stays.
func (w *Worktree) Settle(ctx context.Context) bool {
	log := *zerolog.Ctx(ctx)
	files, err := w.changed(ctx, w.git)
	if err != nil {
		log.Warn().Err(err).Str("branch", w.branch).Msg("changes on the branch not read; the worktree stays")
		return true
	}
	if len(files) > 0 {
		return true
	}
	if err := w.remove(ctx, true); err != nil {
		return true
	}
	if _, err := w.git(ctx, "branch", "-D", w.branch); err != nil {
		log.Warn().Err(err).Str("branch", w.branch).Msg("branch without changes not deleted")
	}
	log.Info().Str("branch", w.branch).Msg("no changes: worktree and branch removed")
	return false
}

// ApproveText ends the approval request of changes on the branch.
func (w *Worktree) ApproveText() string {
	into := headBranch(w.checkout)
	if into == "" {
		into = "your checkout"
	}
	return fmt.Sprintf(MsgApproveBranch, w.branch, into)
}

// Remember notes in home that project's approval request is about w's
// branch (w nil: about the checkout), for approve and reject.
func (w *Worktree) Remember(home, project string) error {
	if w == nil {
		return forgetWorktree(home, project)
	}
	return sandbox.WriteBeneath(home, worktreeFileOf(project), []byte(w.branch+"\n"), 0o600, nil)
}

// forgetWorktree removes the note that project's approval request is
// about a branch.
func forgetWorktree(home, project string) error {
	if err := sandbox.RemoveBeneath(home, worktreeFileOf(project)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
