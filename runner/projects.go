package runner

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
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/sandbox"
)

// Projects (issue 19): a person has several workspaces, one per project.
// The default project is <Workspaces>/<user key>, as it always was; a named
// one is <Workspaces>/.projects/<user key>/<name>. The agent's home,
// <Workspaces>/.home/<user key>, is shared by the person's projects (Claude
// Code keeps its transcripts per working directory), each project with a
// session file of its own there (sessionFileOf). The runner keeps each
// person's registry of projects (contract.Projects in
// contract.BucketProjects): what "clone" added, and the branch each
// project was left on after its last run.

// projectsDir, under the workspaces directory, holds the named projects.
const projectsDir = ".projects"

// Texts the person reads about projects.
const (
	// With the project's name twice.
	MsgNoProject = "No project %s here. Reply projects to list yours, or clone <url> %s."
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

// DefaultProjectMaxBytes is Config.ProjectMaxBytes' default.
const DefaultProjectMaxBytes = 2 << 30

// errRefused is a job refused for a reason the person is told as is.
type errRefused struct{ msg string }

func (e *errRefused) Error() string { return e.msg }

func refuse(format string, args ...any) (agent.Result, error) {
	return agent.Result{}, &errRefused{msg: fmt.Sprintf(format, args...)}
}

// workspaceOf is the workspace of u's project ("" or DefaultProject: the
// default one); project must be a checked name.
func (r *Runner) workspaceOf(u contract.User, project string) string {
	if project == "" || project == contract.DefaultProject {
		return filepath.Join(r.cfg.Workspaces, u.Key())
	}
	return filepath.Join(r.cfg.Workspaces, projectsDir, u.Key(), project)
}

// jobWorkspace picks the directory job runs in: its project's workspace
// (project "" for the default one), or the clone's new workspace for a
// clone (made by the clone, once its checks pass). A project whose
// workspace is not on this runner is restored from its snapshot when
// there is one; refusal, when set, says why the job cannot run.
func (r *Runner) jobWorkspace(ctx context.Context, log zerolog.Logger, job contract.Job) (project, dir, refusal string) {
	if job.Action == contract.ActionClone {
		project = contract.DefaultProject // until the text names a valid one
		if _, name, err := cloneArgs(job.Text); err == nil {
			project = name
		}
		return project, r.workspaceOf(job.User, project), ""
	}
	project = job.Project
	if project == contract.DefaultProject {
		project = ""
	}
	if project != "" && contract.CheckProjectName(project) != nil {
		log.Warn().Str("project", project).Msg("job for a project name that cannot be one")
		return project, "", fmt.Sprintf(MsgNoProject, project, project)
	}
	dir = r.workspaceOf(job.User, project)
	switch _, err := os.Lstat(dir); {
	case err == nil:
		return project, dir, ""
	case !errors.Is(err, fs.ErrNotExist):
		log.Error().Err(err).Msg("workspace")
		return project, dir, MsgFailed
	}
	// Not on this runner: its last snapshot, if there is one (follow.go).
	if r.restoreProject(ctx, log, job, project, dir) {
		return project, dir, ""
	}
	if project == "" {
		return project, dir, "" // the default workspace starts empty
	}
	log.Info().Str("project", project).Msg("no such project here")
	return project, dir, fmt.Sprintf(MsgNoProject, project, project)
}

// prepareProject makes a named project's workspace dir (and the home) as
// sandbox.PrepareWorkspace does; the directory of every person's projects, two up
// from dir, is made traversable too (sandbox.PrepareWorkspace sees to dir's
// parent only).
func prepareProject(dir, home string, u *sandbox.User) error {
	top := filepath.Dir(filepath.Dir(dir))
	if err := os.MkdirAll(top, 0o755); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if u != nil {
		if err := os.Chmod(top, 0o755); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	return sandbox.PrepareWorkspace(dir, home, u)
}

// cloneArgs reads a clone job's text, "<url> [<name>]", and checks both:
// the name defaults to the one the URL suggests (contract.CloneURL).
func cloneArgs(text string) (url, name string, err error) {
	f := strings.Fields(text)
	if len(f) == 0 || len(f) > 2 {
		return "", "", &errRefused{msg: fmt.Sprintf(MsgCloneURL, "That")}
	}
	url = f[0]
	suggested, err := contract.CloneURL(url)
	if err != nil {
		return "", "", &errRefused{msg: fmt.Sprintf(MsgCloneURL, contract.RedactURL(url))}
	}
	name = suggested
	if len(f) == 2 {
		name = f[1]
	}
	if name == contract.DefaultProject {
		return "", "", &errRefused{msg: MsgCloneDefault}
	}
	if err := contract.CheckProjectName(name); err != nil {
		return "", "", &errRefused{msg: err.Error()}
	}
	return url, name, nil
}

// cloneAction clones a repository into a new project of the person
// (Job.Action contract.ActionClone, Job.Text "<url> <name>"). Everything
// the dispatcher checked is checked again. git runs through agent.Run.Command:
// as the agent user, in the run's sandbox when there is one, in the
// project's new (empty) workspace, Run.Dir.
type cloneAction struct {
	r    *Runner
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
	if dir := c.r.workspaceOf(u, name); run.Dir != dir {
		return agent.Result{}, fmt.Errorf("clone into %s: the run's directory is %s", dir, run.Dir)
	}
	list, _, err := c.r.readProjects(ctx, u)
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
		return refuse(MsgProjectTaken, name)
	}
	if err := prepareProject(run.Dir, c.home, c.r.user); err != nil {
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
	if err := gitClone(ctx, run, url, shown, log); err != nil {
		return agent.Result{}, err
	}
	size, err := dirSize(run.Dir)
	if err != nil {
		return agent.Result{}, fmt.Errorf("size of the clone: %w", err)
	}
	if limit := c.r.cfg.ProjectMaxBytes; size > limit {
		log.Info().Int64("size", size).Int64("max", limit).Msg("clone over the project size limit; removed")
		return refuse(MsgProjectTooLarge, shown, sizeText(size), sizeText(limit))
	}
	branch := headBranch(run.Dir)
	err = c.r.editProjects(ctx, u, func(p *contract.Projects) (bool, error) {
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
	c.r.branches.set(u, name, branch)
	log.Info().Str("branch", branch).Int64("size", size).Msg("project cloned")
	if branch == "" {
		branch = "none"
	}
	return agent.Result{Text: fmt.Sprintf(MsgCloned, shown, name, branch, name)}, nil
}

// gitClone clones url into the run's directory; a clone git fails is
// refused (errRefused), with git's line of error (url shown as shown).
func gitClone(ctx context.Context, run *agent.Run, url, shown string, log zerolog.Logger) error {
	cmd := run.Command(ctx, "git", "clone", "--quiet", "--", url, ".")
	cmd.Env = cloneEnv(cmd.Env)
	out := &sandbox.CappedBuffer{Max: 64 << 10}
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
	_, err = refuse(MsgCloneFailed, shown, line)
	return err
}

// canAdd says why project name cannot join list, or nil. The default
// project does not count towards contract.ProjectsKept.
func canAdd(list contract.Projects, name string) error {
	if _, ok := list.Find(name); ok {
		return &errRefused{msg: fmt.Sprintf(MsgProjectTaken, name)}
	}
	n := 0
	for _, p := range list.List {
		if p.Name != contract.DefaultProject {
			n++
		}
	}
	if n >= contract.ProjectsKept {
		return &errRefused{msg: fmt.Sprintf(MsgTooManyProjects, n)}
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

// headBranch is the branch checked out in the git repository at dir, read
// from .git/HEAD ("ref: refs/heads/x" → x): "" when dir is not a
// repository or its HEAD is detached. No git runs.
func headBranch(dir string) string {
	b, err := sandbox.ReadBeneath(dir, filepath.Join(".git", "HEAD"), 1024)
	if err != nil {
		return ""
	}
	branch, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: refs/heads/")
	if !ok || len(branch) > 255 || strings.ContainsAny(branch, "\x00\n") {
		return ""
	}
	return branch
}

// branchMemory is the branch this runner last knew of each person's
// project, so that a run which did not change it costs no KV operation.
type branchMemory struct {
	mu sync.Mutex
	m  map[string]string // user key + "/" + project name (contract.ProjectOf) → branch
}

func branchKey(u contract.User, project string) string {
	return u.Key() + "/" + contract.ProjectOf(project)
}

func (b *branchMemory) get(u contract.User, project string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	branch, ok := b.m[branchKey(u, project)]
	return branch, ok
}

func (b *branchMemory) set(u contract.User, project, branch string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]string{}
	}
	b.m[branchKey(u, project)] = branch
}

// noteBranch records in the registry the branch the run left u's project
// ("": the default) on, when it is not the one this runner last knew (or,
// knowing none, found in the registry). A project without an entry gets
// one once it has a branch: the default one, named DefaultProject,
// without a URL.
func (r *Runner) noteBranch(ctx context.Context, log zerolog.Logger, u contract.User, project, dir string) {
	branch := headBranch(dir)
	known, ok := r.branches.get(u, project)
	if !ok {
		list, _, err := r.readProjects(ctx, u)
		if err != nil {
			log.Warn().Err(err).Msg("projects registry not read; branch not recorded")
			return
		}
		p, _ := list.Find(contract.ProjectOf(project))
		known = p.Branch
		r.branches.set(u, project, known)
	}
	if branch == known {
		return
	}
	name := contract.ProjectOf(project)
	err := r.editProjects(ctx, u, func(p *contract.Projects) (bool, error) {
		for i := range p.List {
			if p.List[i].Name == name {
				if p.List[i].Branch == branch {
					return false, nil
				}
				p.List[i].Branch = branch
				return true, nil
			}
		}
		if branch == "" {
			return false, nil
		}
		p.List = append(p.List, contract.Project{Name: name, Branch: branch, At: time.Now().UTC()})
		return true, nil
	})
	if err != nil {
		log.Warn().Err(err).Str("branch", branch).Msg("branch not recorded in the projects registry")
		return
	}
	r.branches.set(u, project, branch)
}

// readProjects reads u's registry of projects and its revision (0: none).
func (r *Runner) readProjects(ctx context.Context, u contract.User) (contract.Projects, uint64, error) {
	if r.projects == nil {
		return contract.Projects{}, 0, errors.New("projects registry not open")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := r.projects.Get(ctx, u.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return contract.Projects{}, 0, nil
	}
	if err != nil {
		return contract.Projects{}, 0, fmt.Errorf("projects of %s: %w", u.Key(), err)
	}
	var p contract.Projects
	if err := contract.Decode(e.Value(), &p); err != nil {
		return contract.Projects{}, 0, fmt.Errorf("projects of %s: %w", u.Key(), err)
	}
	return p, e.Revision(), nil
}

// editProjects changes u's registry with edit, by compare-and-set on its
// revision, reading it again after a conflict; edit reports whether it
// changed anything (nothing is written when not) or why it refuses.
func (r *Runner) editProjects(ctx context.Context, u contract.User, edit func(*contract.Projects) (bool, error)) error {
	for range 10 {
		p, rev, err := r.readProjects(ctx, u)
		if err != nil {
			return err
		}
		if changed, err := edit(&p); err != nil || !changed {
			return err
		}
		data, err := contract.Encode(&p)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if rev == 0 {
			_, err = r.projects.Create(wctx, u.Key(), data)
		} else {
			_, err = r.projects.Update(wctx, u.Key(), data, rev)
		}
		cancel()
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
			continue
		}
		if err != nil {
			return fmt.Errorf("projects of %s: %w", u.Key(), err)
		}
		return nil
	}
	return fmt.Errorf("projects of %s: written by others all along", u.Key())
}
