// Package snapshot keeps a person's workspace where another runner can
// rebuild it: Take stores the state of a workspace (its repository's
// history, its uncommitted work, the agent's sessions of it) in an object
// store (contract.BucketSnapshots), and Restore rebuilds it from there,
// into a new place, when the runner holding it is gone. When to take and
// restore is the runner's; this package owns the format and the two
// directions.
//
// A snapshot is one gzipped tar, in this order:
//
//	snapshot.json   manifest: the kind, branch, HEAD, origin, what was
//	                deleted, staged or left out
//	repo.bundle     git bundle create --all (a repository with commits,
//	                unless left out)
//	files/<path>    the uncommitted work: files changed since HEAD and
//	                untracked ones git does not ignore (every file when the
//	                workspace is no repository); symlinks as symlinks
//	claude/<path>   the agent's session transcripts of the workspace:
//	                <home>/.claude/projects/<claudeProjectDir(dir)>/…
//	session         the session id file
//	late.json       what was left out while writing (a file that changed)
//
// Git runs as the agent user (Source.Command); the archive is read
// and written here, through os.Root, so nothing is read or written outside
// the workspace and the home whatever links the agent left.
//
// It knows nothing of the runner that uses it.
package snapshot
