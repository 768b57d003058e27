package workspace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// Answer is the agent of the person's answer to an approval request
// (Job.Action approve or reject) about project: in the checkout (w nil),
// or on the worktree's branch when the request was about it (w from
// OpenWorktree). approve commits under the request noted for the
// approval (NoteRequest); home is the agent's home.
func Answer(w *Worktree, home, project string, log zerolog.Logger) agent.Agent {
	request := notedRequest(home, project)
	if w != nil {
		return worktreeAction{w: w, home: home, log: log, request: request}
	}
	return gitAction{request: request}
}

// gitAction carries out the person's answer to an approval request in the
// workspace's git repository: approve commits the changes on a branch of
// their own, reject discards them.
type gitAction struct {
	// request is the person's request the changes answer, the commit's
	// subject (notedRequest); "" when not known.
	request string
}

// gitIdentity is the committer when the workspace sets none.
var gitIdentity = []string{"-c", "user.name=textslash", "-c", "user.email=textslash@localhost"}

func (a gitAction) Run(ctx context.Context, r *agent.Run) (agent.Result, error) {
	git := func(args ...string) (string, error) {
		cmd := r.Command(ctx, "git", append(append([]string{}, gitIdentity...), args...)...)
		out := &output.CappedBuffer{Max: 64 << 10}
		cmd.Stdout, cmd.Stderr = out, out
		err := cmd.Run()
		sandbox.EndGroup(cmd)
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(out.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
	if _, err := git("rev-parse", "--is-inside-work-tree"); err != nil {
		return agent.Result{Text: "Your workspace is not a git repository, so there is nothing to " + r.Job.Action + "."}, nil
	}
	changes, err := git("status", "--porcelain")
	if err != nil {
		return agent.Result{}, err
	}
	if changes == "" {
		return agent.Result{Text: "There are no uncommitted changes in your workspace."}, nil
	}
	files := len(strings.Split(changes, "\n"))
	switch r.Job.Action {
	case contract.ActionReject:
		if _, err := git("checkout", "--", "."); err != nil {
			return agent.Result{}, err
		}
		if _, err := git("clean", "-fd"); err != nil {
			return agent.Result{}, err
		}
		return agent.Result{Text: fmt.Sprintf("Discarded the changes to %s.", contract.Plural(files, "file"))}, nil
	case contract.ActionApprove:
		branch := "textslash/" + shortID(r.Job.ID)
		if _, err := git("checkout", "-B", branch); err != nil {
			return agent.Result{}, err
		}
		if _, err := git("add", "-A"); err != nil {
			return agent.Result{}, err
		}
		if _, err := git(append([]string{"commit", "-q"}, commitMessage(a.request)...)...); err != nil {
			return agent.Result{}, err
		}
		text := fmt.Sprintf("Committed the changes to %s on branch %s.", contract.Plural(files, "file"), branch)
		if url, err := pullRequest(ctx, r, git, branch); err != nil {
			text += " No pull request: " + err.Error() + "."
		} else {
			text += " Pull request: " + url
		}
		return agent.Result{Text: text}, nil
	}
	return agent.Result{}, fmt.Errorf("unknown action %q", r.Job.Action)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// pullRequest pushes branch to origin and opens a pull request with the
// GitHub CLI, when it is installed and logged in (as the agent user, in
// its home: gh auth login). The error says, for the person, why not.
func pullRequest(ctx context.Context, r *agent.Run, git func(...string) (string, error), branch string) (string, error) {
	if _, err := exec.LookPath("gh"); err != nil {
		return "", errors.New("the GitHub CLI (gh) is not installed")
	}
	if _, err := git("remote", "get-url", "origin"); err != nil {
		return "", errors.New("the repository has no origin remote")
	}
	gh := func(args ...string) (string, error) {
		cmd := r.Command(ctx, "gh", args...)
		out := &output.CappedBuffer{Max: 64 << 10}
		cmd.Stdout, cmd.Stderr = out, out
		err := cmd.Run()
		sandbox.EndGroup(cmd)
		return strings.TrimSpace(out.String()), err
	}
	if _, err := gh("auth", "status"); err != nil {
		return "", errors.New("gh is not logged in")
	}
	if _, err := git("push", "-q", "-u", "origin", branch); err != nil {
		return "", errors.New("the push to origin failed")
	}
	out, err := gh("pr", "create", "--fill", "--head", branch)
	if err != nil {
		return "", errors.New("gh pr create failed")
	}
	lines := strings.Split(out, "\n")
	return lines[len(lines)-1], nil
}

// worktreeAction answers an approval request about a branch: approve
// commits the worktree's changes on it, merges it into the checkout's
// branch when it can, pushes it and opens a pull request when it can, and
// removes the worktree, keeping the branch; reject removes both. The
// run's directory is the checkout; its sandbox sees the worktree.
type worktreeAction struct {
	w    *Worktree
	home string
	log  zerolog.Logger
	// request is the person's request the changes answer, the commit's
	// subject (notedRequest); "" when not known.
	request string
}

func (a worktreeAction) Run(ctx context.Context, r *agent.Run) (agent.Result, error) {
	w, log := a.w, a.log.With().Str("branch", a.w.branch).Logger()
	git := gitWith(r.Command)
	var res agent.Result
	if _, err := git(ctx, "rev-parse", "-q", "--verify", "refs/heads/"+w.branch); err != nil {
		if w.present {
			return agent.Result{}, fmt.Errorf("worktree on %s without the branch: %w", w.branch, err)
		}
		res.Text = fmt.Sprintf(MsgBranchGone, w.branch)
	} else {
		files, err := w.changed(ctx, git)
		if err != nil {
			return agent.Result{}, err
		}
		switch r.Job.Action {
		case contract.ActionReject:
			if w.present {
				if err := w.remove(log.WithContext(ctx), true); err != nil {
					return agent.Result{}, err
				}
			}
			if _, err := git(ctx, "branch", "-D", w.branch); err != nil {
				return agent.Result{}, err
			}
			res.Text = fmt.Sprintf(MsgBranchDiscarded, w.branch, contract.Plural(len(files), "file"))
		case contract.ActionApprove:
			if len(files) == 0 {
				if w.present {
					_ = w.remove(log.WithContext(ctx), true)
				}
				_, _ = git(ctx, "branch", "-D", w.branch)
				res.Text = fmt.Sprintf(MsgBranchGone, w.branch)
				break
			}
			if res.Text, err = a.approve(ctx, r, git, len(files)); err != nil {
				return agent.Result{}, err
			}
		}
	}
	if err := forgetWorktree(a.home, r.Job.Project); err != nil {
		log.Warn().Err(err).Msg("note of the approval request's branch not removed")
	}
	return res, nil
}

// approve commits, merges, offers a pull request and removes the
// worktree; files is how many files the branch changes.
func (a worktreeAction) approve(ctx context.Context, r *agent.Run, git gitFunc, files int) (string, error) {
	w, log := a.w, a.log
	if w.present {
		if st, err := git(ctx, "-C", w.dir, "status", "--porcelain"); err != nil {
			return "", err
		} else if st != "" {
			if _, err := git(ctx, "-C", w.dir, "add", "-A"); err != nil {
				return "", err
			}
			if _, err := git(ctx, append([]string{"-C", w.dir, "commit", "-q"}, commitMessage(a.request)...)...); err != nil {
				return "", err
			}
		}
		// Committed: what git will not remove now is only ignored files.
		if err := w.remove(log.WithContext(ctx), false); err != nil {
			log.Warn().Err(err).Msg("git worktree remove; forced")
			if err := w.remove(log.WithContext(ctx), true); err != nil {
				log.Error().Err(err).Msg("worktree not removed")
			}
		}
	}
	into, why := w.merge(ctx, git)
	text := fmt.Sprintf(MsgMerged, contract.Plural(files, "file"), w.branch, into)
	if why != "" {
		log.Info().Str("reason", why).Msg("branch not merged")
		text = fmt.Sprintf(MsgBranchKept, contract.Plural(files, "file"), w.branch, why)
	}
	if url, err := pullRequest(ctx, r, func(args ...string) (string, error) { return git(ctx, args...) }, w.branch); err != nil {
		text += " No pull request: " + err.Error() + "."
	} else {
		text += " Pull request: " + url
	}
	return text, nil
}

// merge merges the branch into the checkout's branch, into, or says why
// not. A checkout with uncommitted changes to tracked files only takes a
// fast-forward, which keeps them (or refuses); a merge that conflicts is
// aborted.
func (w *Worktree) merge(ctx context.Context, git gitFunc) (into, why string) {
	into = headBranch(w.checkout)
	if into == "" {
		return "", "your checkout is not on a branch"
	}
	if _, err := git(ctx, "rev-parse", "-q", "--verify", "MERGE_HEAD"); err == nil {
		return into, "a merge is under way in your checkout"
	}
	dirty, err := git(ctx, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return into, "git could not read your checkout's status"
	}
	args := []string{"merge", "-q", "--no-edit", w.branch}
	if dirty != "" {
		args = []string{"merge", "-q", "--ff-only", w.branch}
	}
	out, err := git(ctx, args...)
	if err == nil {
		return into, ""
	}
	if _, e := git(ctx, "rev-parse", "-q", "--verify", "MERGE_HEAD"); e == nil {
		_, _ = git(ctx, "merge", "--abort")
		return into, "it conflicts with " + into + "; merge it yourself"
	}
	if dirty != "" {
		return into, "your checkout has uncommitted changes, so only a fast-forward merge was tried, and " + into + " has moved on or the changes overlap"
	}
	if line := gitError(out); line != "" {
		return into, "git merge: " + line
	}
	return into, "git merge failed"
}
