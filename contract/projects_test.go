package contract

import (
	"strings"
	"testing"
)

func TestCloneURL(t *testing.T) {
	for _, c := range []struct{ url, name string }{
		{"https://github.com/owner/My.Repo.git", "my-repo"},
		{"https://github.com/owner/repo/", "repo"},
		{"ssh://git@host:2222/owner/repo.git", "repo"},
		{"git@github.com:owner/repo.git", "repo"},
		{"file:///srv/git/site.git", "site"},
		{"git://host/x/default.git", "project"},
		{"ssh://deploy@host/o/r.git", "r"},
	} {
		if name, err := CloneURL(c.url); err != nil || name != c.name {
			t.Errorf("CloneURL(%q) = %q, %v; want %q", c.url, name, err, c.name)
		}
	}
	for _, bad := range []string{
		"", "-uhttps://x/y", "--upload-pack=touch /tmp/x", "ext::sh -c touch%20/tmp/x", "ext::sh", "fd::3",
		"ftp://host/r.git", "https:///nohost", "/srv/git/site.git", "repo", "https://h/r.git\n", "https://h/r .git",
		"https://user:ghp_secret@github.com/o/r.git", "https://ghp_secret@github.com/o/r.git", "ssh://u:pw@host/r.git",
	} {
		if name, err := CloneURL(bad); err == nil {
			t.Errorf("CloneURL(%q) = %q; want an error", bad, name)
		}
	}
	for _, raw := range []string{"https://user:ghp_secret@github.com/o/r.git", "https://ghp_secret@github.com/o/r.git", "ssh://u:ghp_secret@h/r"} {
		if got := RedactURL(raw); strings.Contains(got, "ghp_secret") {
			t.Errorf("RedactURL kept the token: %q", got)
		}
		if _, err := CloneURL(raw); err == nil || strings.Contains(err.Error(), "ghp_secret") {
			t.Errorf("CloneURL(%q): error %v; want one without the token", raw, err)
		}
	}
	for _, ok := range []string{"web", "a", "my-site_2"} {
		if err := CheckProjectName(ok); err != nil {
			t.Errorf("CheckProjectName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "Web", "../x", ".git", "-x", "a b", "a=b", strings.Repeat("a", 41)} {
		if CheckProjectName(bad) == nil {
			t.Errorf("CheckProjectName(%q): want an error", bad)
		}
	}
}
