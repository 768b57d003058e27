package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// Texts the person reads about a clone.
const (
	// With the URL (redacted), the name, the branch and the name again.
	MsgCloned = "Cloned %s into project %s (branch %s). Reply use %s to work in it."
	// With the name.
	MsgProjectTaken = "You already have a project called %s. Pick another name: clone <url> <name>."
	// With how many projects that is.
	MsgTooManyProjects = "You already have %d projects, the most a person may have here, so nothing was cloned."
	// With the URL (redacted) and git's last line of error.
	MsgCloneFailed = "Could not clone %s: %s"
	// With the URL (redacted), its size and the limit.
	MsgProjectTooLarge = "Not kept: %s takes %s on disk, more than the %s a project may take here, so the clone was removed."
	// With the URL (redacted).
	MsgCloneURL     = "%s is not a repository URL git can clone: use https://…, ssh://…, git@host:path or file://…"
	MsgCloneDefault = "default is the name of the project you started with: pick another name for the clone."
)

// cloneArgs reads a clone job's text, "<url> [<name>]", and checks both:
// the name defaults to the one the URL suggests (contract.CloneURL).
func cloneArgs(text string) (url, name string, err error) {
	f := strings.Fields(text)
	if len(f) == 0 || len(f) > 2 {
		return "", "", refuse(MsgCloneURL, "That")
	}
	url = f[0]
	suggested, err := contract.CloneURL(url)
	if err != nil {
		return "", "", refuse(MsgCloneURL, contract.RedactURL(url))
	}
	name = suggested
	if len(f) == 2 {
		name = f[1]
	}
	if name == contract.DefaultProject {
		return "", "", &Refusal{Text: MsgCloneDefault}
	}
	if err := contract.CheckProjectName(name); err != nil {
		return "", "", &Refusal{Text: err.Error()}
	}
	return url, name, nil
}

// Clone is the agent of a clone job: it clones a repository into a new
// project of the person (Job.Action contract.ActionClone, Job.Text
// "<url> <name>"); home is the agent's home. A clone refused is a
// *Refusal.
func (w *Workspaces) Clone(home string, log zerolog.Logger) agent.Agent {
	return cloneAction{w: w, home: home, log: log}
}

// cloneAction clones a repository into a new project of the person.
// Everything the dispatcher checked is checked again. git runs through
// agent.Run.Command: as the agent user, in the run's sandbox when there
// is one, in the project's new (empty) workspace, Run.Dir.
type cloneAction struct {
	w    *Workspaces
	home string
	log  zerolog.Logger
}

// cloneEnv is git's environment for a clone, added to the run's env: the
// transports a person may clone with (no ext::, no fd::), and no prompt
// for a password or host key that nobody could answer. A run handed the
// person's ssh key has its own GIT_SSH_COMMAND (batch mode too), kept.
func cloneEnv(env []string) []string {
	env = append(env, "GIT_ALLOW_PROTOCOL=https:http:ssh:git:file", "GIT_TERMINAL_PROMPT=0")
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "GIT_SSH_COMMAND=") }) {
		env = append(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new")
	}
	return env
}

func (c cloneAction) Run(ctx context.Context, run *agent.Run) (res agent.Result, err error) {
	u := run.Job.User
	url, name, err := cloneArgs(run.Job.Text)
	if err != nil {
		return agent.Result{}, err
	}
	shown := contract.RedactURL(url)
	log := c.log.With().Str("project", name).Str("url", shown).Logger()
	if dir := c.w.dir(u, name); run.Dir != dir {
		return agent.Result{}, fmt.Errorf("clone into %s: the run's directory is %s", dir, run.Dir)
	}
	list, _, err := c.w.readProjects(ctx, u)
	if err != nil {
		return agent.Result{}, err
	}
	if err := canAdd(list, name); err != nil {
		return agent.Result{}, err
	}
	// A directory without an entry (a clone cut short by a crash, a
	// project not yet registered) is the person's all the same: never
	// cloned over.
	if _, err := os.Lstat(run.Dir); !errors.Is(err, fs.ErrNotExist) {
		log.Info().Err(err).Msg("clone refused: the project's directory exists")
		return agent.Result{}, refuse(MsgProjectTaken, name)
	}
	if err := prepareProject(run.Dir, c.home, c.w.User); err != nil {
		return agent.Result{}, err
	}
	kept := false
	defer func() {
		if !kept {
			if err := os.RemoveAll(run.Dir); err != nil {
				log.Error().Err(err).Msg("half-made project not removed")
			}
		}
	}()

	run.Progress("Cloning " + shown + "…")
	if err := gitClone(log.WithContext(ctx), run, url, shown); err != nil {
		return agent.Result{}, err
	}
	size, err := dirSize(run.Dir)
	if err != nil {
		return agent.Result{}, fmt.Errorf("size of the clone: %w", err)
	}
	if limit := c.w.ProjectMax; size > limit {
		log.Info().Int64("size", size).Int64("max", limit).Msg("clone over the project size limit; removed")
		return agent.Result{}, refuse(MsgProjectTooLarge, shown, sizeText(size), sizeText(limit))
	}
	branch := headBranch(run.Dir)
	err = c.w.editProjects(ctx, u, func(p *contract.Projects) (bool, error) {
		if err := canAdd(*p, name); err != nil {
			return false, err
		}
		p.List = append(p.List, contract.Project{Name: name, URL: shown, Branch: branch, At: time.Now().UTC()})
		return true, nil
	})
	if err != nil {
		return agent.Result{}, err
	}
	kept = true
	c.w.branches.set(u, name, branch)
	log.Info().Str("branch", branch).Int64("size", size).Msg("project cloned")
	if branch == "" {
		branch = "none"
	}
	return agent.Result{Text: fmt.Sprintf(MsgCloned, shown, name, branch, name)}, nil
}

// gitClone clones url into the run's directory; a clone git fails is
// refused (a *Refusal), with git's line of error (url shown as shown).
func gitClone(ctx context.Context, run *agent.Run, url, shown string) error {
	log := *zerolog.Ctx(ctx)
	cmd := run.Command(ctx, "git", "clone", "--quiet", "--", url, ".")
	cmd.Env = cloneEnv(cmd.Env)
	out := &output.CappedBuffer{Max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	sandbox.EndGroup(cmd)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("git clone: %w", ctx.Err())
	}
	line := gitError(redactText(out.String(), url))
	log.Info().Int("exit_code", sandbox.ExitCode(cmd)).Str("git", line).Msg("clone failed")
	if line == "" {
		line = fmt.Sprintf("git ended with code %d", sandbox.ExitCode(cmd))
	}
	return refuse(MsgCloneFailed, shown, line)
}

// canAdd says why project name cannot join list, or nil. The default
// project does not count towards contract.ProjectsKept.
func canAdd(list contract.Projects, name string) error {
	if _, ok := list.Find(name); ok {
		return refuse(MsgProjectTaken, name)
	}
	n := 0
	for _, p := range list.List {
		if p.Name != contract.DefaultProject {
			n++
		}
	}
	if n >= contract.ProjectsKept {
		return refuse(MsgTooManyProjects, n)
	}
	return nil
}

// userinfoRE: the credentials of any URL in a text.
var userinfoRE = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s'"]+@`)

// redactText is text (git's error output) without the URL it was given
// as typed, nor credentials of any URL in it.
func redactText(text, url string) string {
	if url != "" {
		text = strings.ReplaceAll(text, url, contract.RedactURL(url))
	}
	return userinfoRE.ReplaceAllString(text, "${1}xxxxx@")
}

// gitError is the line of git's error output that says what went wrong:
// its first "fatal:" line (later ones are generic: "Could not read from
// remote repository."), else its last line; at most 300 characters.
func gitError(text string) string {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	line := lines[len(lines)-1]
	for _, l := range lines {
		if strings.HasPrefix(l, "fatal:") {
			line = l
			break
		}
	}
	line = strings.TrimSpace(line)
	if r := []rune(line); len(r) > 300 {
		line = string(r[:300]) + "…"
	}
	return line
}

// sizeText is n bytes as a person reads it.
func sizeText(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return sandbox.BytesText(n)
}

// dirSize is what the regular files under dir take, links not followed.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}
