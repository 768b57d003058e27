package contract

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"
)

// Projects: a person works in several workspaces, one per project. The
// default project is the workspace every person has (a git repository or
// not); "clone <url> [name]" adds one, "use <name>" picks the one their
// next messages run in. The runner owns the projects (it clones them and
// keeps the registry in BucketProjects); the dispatcher keeps which one is
// current, per person, in UserState.
const (
	// DefaultProject names the workspace a person starts with. Jobs and
	// states write it as "".
	DefaultProject = "default"
	// ActionClone: the job clones Job.Text ("<url> <name>") into a new
	// project of the person.
	ActionClone = "clone"
	// BucketProjects holds each person's registry of projects (Projects,
	// by User.Key), written by the runner.
	BucketProjects = "projects"
	// BucketSnapshots is the object store of workspace snapshots
	// (SnapshotName): what a runner taking a person over restores.
	BucketSnapshots = "snapshots"
	// SnapshotsMaxBytes bounds the snapshot store; a person's snapshots
	// are replaced as they are taken, so this holds the last of each
	// project.
	SnapshotsMaxBytes = 1 << 30
	// SnapshotsKept is how long a snapshot lasts after it was taken.
	SnapshotsKept = 30 * 24 * time.Hour
	// ProjectsKept is how many projects a person may have.
	ProjectsKept = 20
)

// Projects is a person's registry of projects in BucketProjects.
type Projects struct {
	V    int       `json:"v"`
	List []Project `json:"list"`
}

// Project is one of a person's projects.
type Project struct {
	Name string `json:"name"`
	// URL is where it was cloned from, without any credentials; empty for
	// the default project.
	URL string `json:"url,omitempty"`
	// Branch is the branch checked out after its last run ("" : not a git
	// repository, or a detached HEAD).
	Branch string    `json:"branch,omitempty"`
	At     time.Time `json:"at"` // when it was cloned
}

// Find returns the project called name, if there is one.
func (p Projects) Find(name string) (Project, bool) {
	for _, pr := range p.List {
		if pr.Name == name {
			return pr, true
		}
	}
	return Project{}, false
}

// projectNameRE: a directory name and a subject-safe word: no dots first,
// no slashes, nothing a shell or git reads as an option.
var projectNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// CheckProjectName says why name cannot name a project, or nil.
func CheckProjectName(name string) error {
	if !projectNameRE.MatchString(name) {
		return fmt.Errorf("%q cannot name a project: use at most 40 lower-case letters, digits, - and _, starting with a letter or digit", name)
	}
	return nil
}

// ProjectOf is the name a project is shown by: p, or DefaultProject for "".
func ProjectOf(p string) string {
	if p == "" {
		return DefaultProject
	}
	return p
}

// CloneURL checks that raw is a URL git may clone from (https, http,
// ssh, git or file, or scp-like user@host:path) and returns the name its
// project gets by default: its last path element without ".git", lower
// case, with other characters made "-".
func CloneURL(raw string) (name string, err error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%q is not a repository URL git can clone (%s): use https://…, ssh://…, git@host:path or file://…", RedactURL(raw), why)
	}
	if raw == "" || strings.HasPrefix(raw, "-") || strings.ContainsAny(raw, " \t\n\r\x00") {
		return bad("empty, or starts with -")
	}
	if strings.Contains(raw, "::") {
		return bad("git reads <transport>::<address> as a program to run")
	}
	var p string
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && strings.Contains(raw, "://") {
		switch u.Scheme {
		case "https", "http", "ssh", "git", "file":
		default:
			return bad("scheme " + u.Scheme)
		}
		if u.Scheme != "file" && u.Host == "" {
			return bad("no host")
		}
		if _, has := u.User.Password(); has || (u.User != nil && (u.Scheme == "https" || u.Scheme == "http")) {
			return bad("it carries a user, password or token, which messages must not: they are kept. Your git credentials are set up by whoever runs textslash")
		}
		p = u.Path
	} else if host, rest, ok := strings.Cut(raw, ":"); ok && host != "" && !strings.Contains(host, "/") && rest != "" {
		p = rest // scp-like: git@github.com:owner/repo.git
	} else {
		return bad("no scheme")
	}
	base := strings.TrimSuffix(path.Base(strings.TrimRight(p, "/")), ".git")
	name = strings.Trim(regexp.MustCompile(`[^a-z0-9_-]+`).ReplaceAllString(strings.ToLower(base), "-"), "-_")
	if len(name) > 40 {
		name = strings.Trim(name[:40], "-_")
	}
	if name == "" || name == DefaultProject {
		name = "project"
	}
	return name, nil
}

// RedactURL is raw without the password or token it may carry: an http(s)
// URL's whole user part (a token is often given as the user), any other
// URL's password.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	switch _, has := u.User.Password(); {
	case u.Scheme == "https" || u.Scheme == "http":
		u.User = url.User("xxxxx")
	case has:
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// SnapshotName is the object in BucketSnapshots holding the snapshot of
// project (DefaultProject for "") of u.
func SnapshotName(u User, project string) string {
	return u.Key() + "/" + ProjectOf(project)
}

func (p *Projects) version() int { return p.V }

func (p *Projects) setVersion() { p.V = Version }
