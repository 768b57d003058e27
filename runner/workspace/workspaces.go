package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// Where things are under the workspaces directory (Workspaces.Root): the
// default project of a person is <Root>/<user key>, a named one
// <Root>/.projects/<user key>/<name>, the agent's home <Root>/.home/<user
// key> (shared by the person's projects), a project's worktree
// <Root>/.worktrees/<user key>/<name>, and copies set aside
// <Root>/.stale/ (or the person's disk: Aside).
const (
	// projectsDir holds the named projects.
	projectsDir = ".projects"
	// homesDir holds the agents' homes.
	homesDir = ".home"
	// worktreesDir holds the worktrees.
	worktreesDir = ".worktrees"
	// staleDir holds the workspaces set aside (SetAside).
	staleDir = ".stale"
)

// Workspaces are the people's workspaces on this runner, and what works
// on them. The fields are set once, before Open; Open sets the JetStream
// handles.
type Workspaces struct {
	// Root is the workspaces directory, an absolute path.
	Root string
	// User is the agent user git and the clone run as; nil: textslash's.
	User *sandbox.User
	// Sandbox is the runs' sandbox, which the runner's own git runs in
	// too; nil: none.
	Sandbox *sandbox.Sandbox
	// Bin is the directory of the agents' textslash command, bound into
	// the sandbox; "" when none.
	Bin string
	// ProjectMax is the most bytes a cloned project may take on disk.
	ProjectMax int64
	// SnapshotMax is the most a snapshot may hold (snapshot.Source.Max).
	SnapshotMax int64

	// projects is each person's registry of projects
	// (contract.BucketProjects); branches the branch this runner last
	// knew of each project (see NoteBranch).
	projects jetstream.KeyValue
	branches branchMemory
	// snapshots is the snapshot store, nil when snapshots are off.
	snapshots jetstream.ObjectStore
}

// Open finds the registry of projects in JetStream and, with snapshots
// on, the snapshot store.
func (w *Workspaces) Open(ctx context.Context, js jetstream.JetStream, snapshots bool) error {
	kv, err := js.KeyValue(ctx, contract.BucketProjects)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketProjects, err)
	}
	w.projects = kv
	if !snapshots {
		return nil
	}
	obs, err := js.ObjectStore(ctx, contract.BucketSnapshots)
	if err != nil {
		return fmt.Errorf("object store %s: %w", contract.BucketSnapshots, err)
	}
	w.snapshots = obs
	return nil
}

// Home is the agent's home of u: the person's, whatever the project.
func (w *Workspaces) Home(u contract.User) string {
	return filepath.Join(w.Root, homesDir, u.Key())
}

// PersonDirs are the directories holding what u keeps on this runner:
// the default workspace, the named projects, the worktrees and the
// agent's home (a person's disk holds these four).
func (w *Workspaces) PersonDirs(u contract.User) (workspace, projects, worktrees, home string) {
	k := u.Key()
	return filepath.Join(w.Root, k), filepath.Join(w.Root, projectsDir, k), filepath.Join(w.Root, worktreesDir, k), w.Home(u)
}

// Here reports whether the workspace of u's project ("": the default) is
// on this runner, as Pick finds it without restoring it (with a disk
// that is not fresh).
func (w *Workspaces) Here(u contract.User, project string) bool {
	if project != "" && project != contract.DefaultProject && contract.CheckProjectName(project) != nil {
		return false
	}
	_, err := os.Lstat(w.dir(u, project))
	return err == nil
}

// dir is the workspace of u's project ("" or DefaultProject: the
// default one); project must be a checked name.
func (w *Workspaces) dir(u contract.User, project string) string {
	if project == "" || project == contract.DefaultProject {
		return filepath.Join(w.Root, u.Key())
	}
	return filepath.Join(w.Root, projectsDir, u.Key(), project)
}

// gitCommand is a command function for the runner's own git in a
// project's checkout: as the agent user, in the sandbox when runs have
// one (seeing writable too, read-write), without a cgroup, and without a
// network: the agent owns the repository's .git (its hooks, its
// core.fsmonitor, its filters), and what they run must no more reach the
// host's loopback than the agent does; none of this git needs a remote.
func (w *Workspaces) gitCommand(checkout, home string, writable ...string) func(ctx context.Context, name string, args ...string) *exec.Cmd {
	command := sandbox.CommandFunc(checkout, home, w.User, false)
	if box := w.Sandbox; box != nil {
		command = sandbox.Confined(command, withWritable(box, writable...).Offline(), checkout, home, w.Bin, nil)
	}
	return command
}

// restoreCommand is gitCommand for restoring a snapshot, on the host's
// network: a snapshot that left its history out fetches it from the
// project's remote again. The repository is made anew (git init: no hook,
// no configuration of the agent's) and fetches only the snapshot's bundle
// and the remote the project was cloned from (a clone reaches no address
// of this host, being made in a network of its own).
func (w *Workspaces) restoreCommand(checkout, home string) func(ctx context.Context, name string, args ...string) *exec.Cmd {
	command := sandbox.CommandFunc(checkout, home, w.User, false)
	if box := w.Sandbox; box != nil {
		command = sandbox.Confined(command, box, checkout, home, w.Bin, nil)
	}
	return command
}

// withWritable is box for one run that also binds dirs read-write; box,
// shared by every run, is left as it was. (Sandbox.Share is bound
// read-write into a run in the same way, after what is hidden.)
func withWritable(box *sandbox.Sandbox, dirs ...string) *sandbox.Sandbox {
	if box == nil || len(dirs) == 0 {
		return box
	}
	c := *box
	c.Share = append(slices.Clip(box.Share), dirs...)
	return &c
}
