package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// Projects: a person has several workspaces, one per project. The
// default project is <Root>/<user key>; a named one is
// <Root>/.projects/<user key>/<name>. The agent's home, <Root>/.home/<user
// key>, is shared by the person's projects (Claude Code keeps its
// transcripts per working directory), each project with a session file of
// its own there (session.FileOf). The runner keeps each person's registry
// of projects (contract.Projects in contract.BucketProjects): what "clone"
// added, and the branch each project was left on after its last run.

// MsgNoProject: a job for a project that is not here, with its name
// twice.
const MsgNoProject = "No project %s here. Reply projects to list yours, or clone <url> %s."

// DefaultProjectMax is the default of Workspaces.ProjectMax (the
// runner's Config.ProjectMaxBytes): 2 GiB.
const DefaultProjectMax = 2 << 30

// Pick picks the directory job runs in: its project's workspace
// (project "" for the default one), or the clone's new workspace for a
// clone (made by the clone, once its checks pass). A project whose
// workspace is not on this runner is restored from its snapshot when
// there is one, and the person told with tell (its key "restored"). A
// *Refusal says why the job cannot run; another error is the runner's.
// fresh says the person's default workspace is there but was only just
// made, empty (their new disk's): it is taken as not on this runner.
func (w *Workspaces) Pick(ctx context.Context, job contract.Job, fresh bool, tell func(key, text string)) (project, dir string, err error) {
	log := *zerolog.Ctx(ctx)
	if job.Action == contract.ActionClone {
		project = contract.DefaultProject // until the text names a valid one
		if _, name, err := cloneArgs(job.Text); err == nil {
			project = name
		}
		return project, w.dir(job.User, project), nil
	}
	project = job.Project
	if project == contract.DefaultProject {
		project = ""
	}
	if project != "" && contract.CheckProjectName(project) != nil {
		log.Warn().Str("project", project).Msg("job for a project name that cannot be one")
		return project, "", refuse(MsgNoProject, project, project)
	}
	dir = w.dir(job.User, project)
	switch _, err := os.Lstat(dir); {
	case err == nil && (project != "" || !fresh):
		return project, dir, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return project, dir, fmt.Errorf("workspace: %w", err)
	}
	// Not on this runner (or fresh): its last snapshot, if there is one (follow.go).
	if w.restore(ctx, job, project, dir, tell) {
		return project, dir, nil
	}
	if project == "" {
		return project, dir, nil // the default workspace starts empty
	}
	log.Info().Str("project", project).Msg("no such project here")
	return project, dir, refuse(MsgNoProject, project, project)
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

// NoteBranch records in the registry the branch the run left u's project
// ("": the default) on, when it is not the one this runner last knew (or,
// knowing none, found in the registry). A project without an entry gets
// one once it has a branch: the default one, named DefaultProject,
// without a URL.
func (w *Workspaces) NoteBranch(ctx context.Context, u contract.User, project, dir string) {
	log := *zerolog.Ctx(ctx)
	branch := headBranch(dir)
	known, ok := w.branches.get(u, project)
	if !ok {
		list, _, err := w.readProjects(ctx, u)
		if err != nil {
			log.Warn().Err(err).Msg("projects registry not read; branch not recorded")
			return
		}
		p, _ := list.Find(contract.ProjectOf(project))
		known = p.Branch
		w.branches.set(u, project, known)
	}
	if branch == known {
		return
	}
	name := contract.ProjectOf(project)
	err := w.editProjects(ctx, u, func(p *contract.Projects) (bool, error) {
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
	w.branches.set(u, project, branch)
}

// readProjects reads u's registry of projects and its revision (0: none).
func (w *Workspaces) readProjects(ctx context.Context, u contract.User) (contract.Projects, uint64, error) {
	if w.projects == nil {
		return contract.Projects{}, 0, errors.New("projects registry not open")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := w.projects.Get(ctx, u.Key())
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
func (w *Workspaces) editProjects(ctx context.Context, u contract.User, edit func(*contract.Projects) (bool, error)) error {
	for range 10 {
		p, rev, err := w.readProjects(ctx, u)
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
			_, err = w.projects.Create(wctx, u.Key(), data)
		} else {
			_, err = w.projects.Update(wctx, u.Key(), data, rev)
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
