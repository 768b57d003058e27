package snapshot

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

const (
	version = 1
	// DefaultMax bounds a snapshot, before compression, when Source.Max
	// is 0.
	DefaultMax = 100 << 20
	// timeout bounds a take or restore without a deadline (a
	// restore may fetch the repository again from its remote).
	timeout = 10 * time.Minute
	// notesShown is how many left-out files the notes name.
	notesShown = 10

	entryManifest = "snapshot.json"
	entryBundle   = "repo.bundle"
	entryFiles    = "files/"
	entryClaude   = "claude/"
	entrySession  = "session"
	entryLate     = "late.json"
)

// Source is a workspace as Take and Restore see it.
type Source struct {
	// Dir is the workspace, Home the agent's home.
	Dir, Home string
	// Seen is Dir as the agent sees it, links resolved (its working
	// directory, as getcwd names it, which names its sessions), when that
	// is not Dir's real path on the host: a sandbox binds Dir at a path of
	// its own from where Dir's links lead (a person's disk). Empty: Dir
	// with its links resolved.
	Seen string
	// SessionFile names the file in Home holding the agent's session id
	// (session.FileOf(project)).
	SessionFile string
	// URL is the project's remote ("" for none): a snapshot over Max
	// leaves the repository's history out when there is one, and the
	// restore fetches it from there.
	URL string
	// Max bounds the archive (before compression); 0: DefaultMax.
	Max int64
	// Owner gets what Restore creates; nil: the owner of Dir, or
	// of Home when Dir is missing.
	Owner *sandbox.User
	// Command runs a program in Dir as the agent user, confined as the
	// person's runs are (git, here).
	Command func(ctx context.Context, name string, args ...string) *exec.Cmd
}

func (s Source) max() int64 {
	if s.Max <= 0 {
		return DefaultMax
	}
	return s.Max
}

// manifest is snapshot.json.
type manifest struct {
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
	URL      string `json:"url,omitempty"` // Source.URL
	Bundle   int64  `json:"bundle,omitempty"`
	// Files and FileBytes count the regular files under files/.
	Files     int   `json:"files"`
	FileBytes int64 `json:"file_bytes"`
	// Deleted are tracked files deleted and not committed; Staged are
	// the paths whose change was staged (git add): staged again on
	// restore, as the worktree has them (a partly staged file comes back
	// wholly staged).
	Deleted     []string  `json:"deleted,omitempty"`
	Staged      []string  `json:"staged,omitempty"`
	Transcripts int       `json:"transcripts"`
	Session     bool      `json:"session,omitempty"`
	Max         int64     `json:"max"`
	LeftOut     []LeftOut `json:"left_out,omitempty"`
}

// LeftOut is something a snapshot does not hold.
type LeftOut struct {
	What string `json:"what"` // "history", "file" or "transcript"
	Path string `json:"path,omitempty"`
	Size int64  `json:"size,omitempty"`
	Why  string `json:"why"` // "cap", "changed" or "failed"
}

const (
	leftHistory    = "history"
	leftFile       = "file"
	leftTranscript = "transcript"
	whyCap         = "cap"
	whyChanged     = "changed"
	whyFailed      = "failed"
)

// Info says what Take stored.
type Info struct {
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
	LeftOut     []LeftOut
}

// describe is the object's description: what it holds, in sizes.
func describe(m *manifest) string {
	var b strings.Builder
	if m.Git {
		fmt.Fprintf(&b, "git repository, %s", branchAt(m.Branch, m.Head))
		if m.Bundle > 0 {
			fmt.Fprintf(&b, "; history %s", sizeText(m.Bundle))
		}
		fmt.Fprintf(&b, "; %s, %s; %d deleted", contract.Plural(m.Files, "uncommitted file"), sizeText(m.FileBytes), len(m.Deleted))
	} else {
		fmt.Fprintf(&b, "folder; %s, %s", contract.Plural(m.Files, "file"), sizeText(m.FileBytes))
	}
	fmt.Fprintf(&b, "; %s", contract.Plural(m.Transcripts, "session file"))
	if n := len(m.LeftOut); n > 0 {
		var size int64
		for _, l := range m.LeftOut {
			size += l.Size
		}
		fmt.Fprintf(&b, "; left out %d (%s, limit %s)", n, sizeText(size), sizeText(m.Max))
	}
	return b.String()
}

// headers is the object's metadata.
func headers(m *manifest) map[string]string {
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

func branchAt(branch, head string) string {
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

// sizeText says n bytes for people.
func sizeText(n int64) string {
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
