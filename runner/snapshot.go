package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// Workspace snapshots (issue 19): the state of a person's workspace, kept
// in contract.BucketSnapshots, so that the runner taking the person over
// rebuilds it when the one holding it is gone.
//
// A snapshot is one gzipped tar, in this order:
//
//	snapshot.json   snapshotMeta: the kind, branch, HEAD, origin, what was
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
// Git runs as the agent user (snapshotSource.Command); the archive is read
// and written here, through os.Root, so nothing is read or written outside
// the workspace and the home whatever links the agent left.

const (
	snapshotVersion = 1
	// snapshotMaxDefault bounds a snapshot when snapshotSource.Max is 0.
	snapshotMaxDefault = 100 << 20
	// snapshotTimeout bounds a take or restore without a deadline (a
	// restore may fetch the repository again from its remote).
	snapshotTimeout = 10 * time.Minute
	// snapshotNotesShown is how many left-out files the notes name.
	snapshotNotesShown = 10

	snapMeta    = "snapshot.json"
	snapBundle  = "repo.bundle"
	snapFiles   = "files/"
	snapClaude  = "claude/"
	snapSession = "session"
	snapLate    = "late.json"
)

var (
	// errSnapshotBad: an archive that is not a snapshot, or one trying to
	// write outside the workspace or home; nothing is written outside.
	errSnapshotBad = errors.New("not a valid snapshot")
	// errSnapshotNotEmpty: a snapshot is restored into an empty or missing
	// workspace only.
	errSnapshotNotEmpty = errors.New("the workspace to restore into is not empty")
)

// snapshotSource is a workspace as takeSnapshot and restoreSnapshot see it.
type snapshotSource struct {
	// Dir is the workspace, Home the agent's home.
	Dir, Home string
	// SessionFile names the file in Home holding the agent's session id
	// (session.FileOf(project)).
	SessionFile string
	// URL is the project's remote ("" for none): a snapshot over Max
	// leaves the repository's history out when there is one, and the
	// restore fetches it from there.
	URL string
	// Max bounds the archive (before compression); 0: snapshotMaxDefault.
	Max int64
	// Owner gets what restoreSnapshot creates; nil: the owner of Dir, or
	// of Home when Dir is missing.
	Owner *sandbox.User
	// Command runs a program in Dir as the agent user (Run.Command).
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
}

func (s snapshotSource) max() int64 {
	if s.Max <= 0 {
		return snapshotMaxDefault
	}
	return s.Max
}

// snapshotMeta is snapshot.json.
type snapshotMeta struct {
	V   int    `json:"v"`
	Dir string `json:"dir"` // where it was taken
	Git bool   `json:"git"`
	// Branch is the checked out branch ("" : detached); Head its commit
	// ("" : no commit yet).
	Branch string `json:"branch,omitempty"`
	Head   string `json:"head,omitempty"`
	// Origin is the origin remote's URL; Upstream the branch's merge ref
	// there (branch.<Branch>.merge, when its remote is origin).
	Origin   string `json:"origin,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	URL      string `json:"url,omitempty"` // snapshotSource.URL
	Bundle   int64  `json:"bundle,omitempty"`
	// Files and FileBytes count the regular files under files/.
	Files     int   `json:"files"`
	FileBytes int64 `json:"file_bytes"`
	// Deleted are tracked files deleted and not committed; Staged are
	// the paths whose change was staged (git add): staged again on
	// restore, as the worktree has them (a partly staged file comes back
	// wholly staged).
	Deleted     []string          `json:"deleted,omitempty"`
	Staged      []string          `json:"staged,omitempty"`
	Transcripts int               `json:"transcripts"`
	Session     bool              `json:"session,omitempty"`
	Max         int64             `json:"max"`
	LeftOut     []snapshotLeftOut `json:"left_out,omitempty"`
}

// snapshotLeftOut is something a snapshot does not hold.
type snapshotLeftOut struct {
	What string `json:"what"` // leftHistory, leftFile or leftTranscript
	Path string `json:"path,omitempty"`
	Size int64  `json:"size,omitempty"`
	Why  string `json:"why"` // whyCap, whyChanged or whyFailed
}

const (
	leftHistory    = "history"
	leftFile       = "file"
	leftTranscript = "transcript"
	whyCap         = "cap"
	whyChanged     = "changed"
	whyFailed      = "failed"
)

// snapshotInfo says what takeSnapshot stored.
type snapshotInfo struct {
	Size        int64 // the object's bytes
	Raw         int64 // the archive's bytes before compression
	Git         bool
	Branch      string
	Head        string
	Bundle      int64 // bytes of the repository's history; 0: not stored
	Files       int   // files moved, FileBytes their bytes
	FileBytes   int64
	Deleted     int
	Transcripts int
	LeftOut     []snapshotLeftOut
}

// snapEntry is one thing to put in the archive.
type snapEntry struct {
	name    string   // in the archive
	root    *os.Root // read from
	path    string   // beneath root
	mode    fs.FileMode
	size    int64
	link    string
	mtime   time.Time
	current bool // a transcript of the session in the session file
}

// cost is an upper bound of the entry's bytes in the archive.
func (e *snapEntry) cost() int64 {
	n := 512 + snapPad512(e.size)
	if long := e.name + e.link; len(e.name) > 100 || len(e.link) > 100 || strings.ContainsFunc(long, func(r rune) bool { return r >= 0x80 }) {
		n += 512 + snapPad512(int64(len(long)+64)) // a PAX header
	}
	return n
}

func snapPad512(n int64) int64 { return (n + 511) / 512 * 512 }

// describeSnapshot is the object's description: what it holds, in sizes.
func describeSnapshot(m *snapshotMeta) string {
	var b strings.Builder
	if m.Git {
		fmt.Fprintf(&b, "git repository, %s", snapBranchAt(m.Branch, m.Head))
		if m.Bundle > 0 {
			fmt.Fprintf(&b, "; history %s", snapSize(m.Bundle))
		}
		fmt.Fprintf(&b, "; %d uncommitted file(s), %s; %d deleted", m.Files, snapSize(m.FileBytes), len(m.Deleted))
	} else {
		fmt.Fprintf(&b, "folder; %d file(s), %s", m.Files, snapSize(m.FileBytes))
	}
	fmt.Fprintf(&b, "; %d session file(s)", m.Transcripts)
	if n := len(m.LeftOut); n > 0 {
		var size int64
		for _, l := range m.LeftOut {
			size += l.Size
		}
		fmt.Fprintf(&b, "; left out %d (%s, limit %s)", n, snapSize(size), snapSize(m.Max))
	}
	return b.String()
}

// snapshotHeaders is the object's metadata.
func snapshotHeaders(m *snapshotMeta) map[string]string {
	h := map[string]string{
		"version":    strconv.Itoa(m.V),
		"kind":       "folder",
		"dir":        m.Dir,
		"files":      strconv.Itoa(m.Files),
		"file_bytes": strconv.FormatInt(m.FileBytes, 10),
		"left_out":   strconv.Itoa(len(m.LeftOut)),
	}
	if m.Git {
		h["kind"] = "git"
		h["branch"], h["head"] = m.Branch, m.Head
		h["history_bytes"] = strconv.FormatInt(m.Bundle, 10)
		if m.Origin != "" {
			h["origin"] = contract.RedactURL(m.Origin)
		}
	}
	return h
}

func snapBranchAt(branch, head string) string {
	short := head
	if len(short) > 8 {
		short = short[:8]
	}
	switch {
	case head == "" && branch != "":
		return "branch " + branch + " (no commits yet)"
	case head == "":
		return "no commits yet"
	case branch == "":
		return "detached at " + short
	}
	return "branch " + branch + " at " + short
}

// snapSize says n bytes for people.
func snapSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 10<<20:
		return fmt.Sprintf("%d MB", (n+1<<19)>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", (n+1<<9)>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
