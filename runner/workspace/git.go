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
		out := &sandbox.CappedBuffer{Max: 64 << 10}
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
		return agent.Result{Text: fmt.Sprintf("Discarded the changes to %d file(s).", files)}, nil
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
		text := fmt.Sprintf("Committed the changes to %d file(s) on branch %s.", files, branch)
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
		out := &sandbox.CappedBuffer{Max: 64 << 10}
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
