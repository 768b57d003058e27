// Package workspace owns a person's workspaces: where each of their
// projects lives on a runner (Workspaces.Pick), the registry of their
// projects and the branch each was left on, cloning a repository into a
// new project (Workspaces.Clone), the git worktree a message runs in with
// branches on (Worktree), the changes a run left for the person to approve
// (Pending), what approve and reject do in git (Answer: a commit, a merge,
// a pull request; or the changes discarded) under the request noted for
// them (NoteRequest), and following a person across runners: a snapshot of
// a project after each run, restored where its workspace is missing
// (Workspaces.Snapshot, Workspaces.SetAside; the format is package
// snapshot's).
//
// Git and the clone run as the agent user, in the runs' sandbox when
// there is one. It knows nothing of the runner that uses it: the runner
// calls it from a run's life (prepare, report), passing the run's logger
// and context.
package workspace
