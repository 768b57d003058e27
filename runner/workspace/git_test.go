package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/sandbox"
)

// approve pushes the branch and opens a pull request when gh is installed
// and logged in, and says why not otherwise. gh here is a stand-in script
// (the real one needs GitHub); origin is a local bare repository.
func TestApprovePullRequest(t *testing.T) {
	bin := t.TempDir()
	ghLog := filepath.Join(bin, "gh.log")
	gh := `#!/bin/sh
echo "$@" >> ` + ghLog + `
case "$1" in
auth) [ -f ` + filepath.Join(bin, "logged-in") + ` ] ;;
pr) echo "Creating pull request"; echo "https://github.com/acme/app/pull/7" ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "gh"), []byte(gh), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))

	setup := func(t *testing.T, withOrigin bool) *agent.Run {
		r := shellRun(t, "")
		script := "git init -q && git config user.email a@b && git config user.name A && echo one > f && git add f && git commit -qm init && echo two >> f"
		if withOrigin {
			origin := filepath.Join(t.TempDir(), "origin.git")
			if out, err := exec.Command("git", "init", "-q", "--bare", origin).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			script += " && git remote add origin " + origin
		}
		r.Job.Text = script
		if res, err := (agent.Shell{}).Run(t.Context(), r); err != nil || res.ExitCode != 0 {
			t.Fatalf("setup: %q, %v", res.Text, err)
		}
		r.Job.Action, r.Job.ID = contract.ActionApprove, "abcdef0123456789"
		return r
	}
	tests := []struct {
		name       string
		origin     bool
		loggedIn   bool
		wantSuffix string
	}{
		{"no origin", false, true, "No pull request: the repository has no origin remote."},
		{"gh not logged in", true, false, "No pull request: gh is not logged in."},
		{"pull request", true, true, "Pull request: https://github.com/acme/app/pull/7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_ = os.Remove(filepath.Join(bin, "logged-in"))
			if tt.loggedIn {
				if err := os.WriteFile(filepath.Join(bin, "logged-in"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := setup(t, tt.origin)
			res, err := gitAction{}.Run(t.Context(), r)
			if err != nil {
				t.Fatal(err)
			}
			want := "Committed the changes to 1 file on branch textslash/abcdef012345. " + tt.wantSuffix
			if res.Text != want {
				t.Errorf("reply %q; want %q", res.Text, want)
			}
			if tt.wantSuffix[:4] == "Pull" {
				out, err := exec.Command("git", "-C", r.Dir, "ls-remote", "origin", "textslash/abcdef012345").CombinedOutput()
				if err != nil || !strings.Contains(string(out), "refs/heads/textslash/abcdef012345") {
					t.Errorf("branch not pushed to origin: %v %s", err, out)
				}
				log, _ := os.ReadFile(ghLog)
				if !strings.Contains(string(log), "pr create --fill --head textslash/abcdef012345") {
					t.Errorf("gh calls: %s", log)
				}
			}
		})
	}
}

// shellRun prepares a fresh workspace and home and a Run of script in it,
// as this process's user. The environment is taken now: call t.Setenv
// before.
func shellRun(t *testing.T, script string) *agent.Run {
	t.Helper()
	root := t.TempDir()
	dir, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	if err := sandbox.PrepareWorkspace(dir, home, nil); err != nil {
		t.Fatalf("sandbox.PrepareWorkspace: %v", err)
	}
	return &agent.Run{
		Job:       contract.Job{V: contract.Version, ID: "job-1", Text: script, At: time.Now()},
		Dir:       dir,
		Command:   sandbox.CommandFunc(dir, home, nil, false),
		Progress:  func(string) {},
		OutputCap: 1 << 20,
	}
}
