package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/sandbox"
)

// worktreeEnv is a runner with person alice's project app, cloned from
// bareRepo (branch main: README.md, app.txt), whose checkout holds an
// unrelated uncommitted change to README.md.
type worktreeEnv struct {
	*runnerEnv
	u        contract.User
	checkout string // app's checkout
	tree     string // app's worktree
	local    string // the unrelated change's status line
}

func newWorktreeEnv(t *testing.T, cfg Config, au *sandbox.User) *worktreeEnv {
	t.Helper()
	e := newRunnerEnv(t)
	bare := bareRepo(t)
	giveRepo(t, bare, au, filepath.Dir(e.workspaces), e.workspaces)
	if au != nil {
		cfg.AgentUser = au.Name
	}
	if cfg.Sandbox != nil {
		cfg.Sandbox.Share = append(cfg.Sandbox.Share, filepath.Dir(bare)) // the clone reads it
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Minute
	}
	e.start(cfg)
	w := &worktreeEnv{runnerEnv: e, u: e.user(contract.ChannelWeb, "alice"), local: " M README.md"}
	if ev := e.clone(w.u, "clone-app", "file://"+bare, "app"); ev.Status != contract.StatusOK {
		t.Fatalf("clone: %q %q", ev.Status, ev.Text)
	}
	w.checkout = e.projectDir(w.u, "app")
	w.tree = filepath.Join(e.workspaces, ".worktrees", w.u.Key(), "app")
	if err := os.WriteFile(filepath.Join(w.checkout, "README.md"), []byte("# app\nmine, not committed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// message runs text in app with branches on (or off).
func (w *worktreeEnv) message(id, text string, branches bool) contract.Event {
	w.t.Helper()
	return w.run(contract.Job{ID: id, User: w.u, Project: "app", Text: text, Worktree: branches})
}

// answer runs approve or reject in app.
func (w *worktreeEnv) answer(id, action string) contract.Event {
	w.t.Helper()
	return w.run(contract.Job{ID: id, User: w.u, Project: "app", Action: action})
}

// branches are the checkout's textslash branches.
func (w *worktreeEnv) branches() string {
	w.t.Helper()
	return gitIn(w.t, w.checkout, "for-each-ref", "--format=%(refname:short)", "refs/heads/textslash/")
}

// untouched checks that the checkout holds the unrelated change and
// nothing else uncommitted, and not file.
func (w *worktreeEnv) untouched(when, file string) {
	w.t.Helper()
	if st := gitIn(w.t, w.checkout, "status", "--porcelain"); st != strings.TrimSpace(w.local) {
		w.t.Errorf("%s: checkout's status %q; want only the unrelated change %q", when, st, w.local)
	}
	if b, err := os.ReadFile(filepath.Join(w.checkout, "README.md")); w.local != "" && (err != nil || !strings.Contains(string(b), "mine, not committed")) {
		w.t.Errorf("%s: the unrelated change is gone: %q %v", when, b, err)
	}
	if file != "" {
		if _, err := os.Stat(filepath.Join(w.checkout, file)); err == nil {
			w.t.Errorf("%s: %s is in the checkout", when, file)
		}
	}
}

// gone checks that the worktree is removed, and git forgot it.
func (w *worktreeEnv) gone(when string) {
	w.t.Helper()
	if _, err := os.Lstat(w.tree); err == nil {
		w.t.Errorf("%s: the worktree %s is still there", when, w.tree)
	}
	if list := gitIn(w.t, w.checkout, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		w.t.Errorf("%s: git's worktrees:\n%s\nwant the checkout's alone", when, list)
	}
}

// askedOn checks that ev asks approval of changes on branch, file among
// them.
func askedOn(t *testing.T, ev contract.Event, branch, file string) {
	t.Helper()
	want := "The changes are on branch " + branch + "; your checkout is untouched. Reply approve to merge them into main, or reject to delete the branch."
	if ev.Status != contract.StatusOK || !ev.Approval || !strings.HasSuffix(ev.Text, want) || !strings.Contains(ev.Text, "A "+file) {
		t.Fatalf("run: %q approval %t %q; want an approval request naming %s and %s", ev.Status, ev.Approval, ev.Text, file, branch)
	}
}

// With branches on, a message runs in a worktree on textslash/<id>, its
// changes there, the checkout untouched; approve commits them on the
// branch and merges it into the checkout's branch (its unrelated
// uncommitted change kept), removes the worktree and keeps the branch.
func TestWorktreeApprove(t *testing.T) {
	w := newWorktreeEnv(t, Config{}, nil)
	ev := w.message("w1", "echo x > f.txt && pwd && git rev-parse --abbrev-ref HEAD", true)
	askedOn(t, ev, "textslash/w1", "f.txt")
	if !strings.HasPrefix(ev.Text, w.tree+"\ntextslash/w1\n") {
		t.Errorf("the run worked in %q; want the worktree %s on textslash/w1", ev.Text, w.tree)
	}
	w.untouched("after the run", "f.txt")
	if b := w.branches(); b != "textslash/w1" {
		t.Errorf("branches %q; want textslash/w1", b)
	}
	ev = w.answer("a1", contract.ActionApprove)
	if want := "Merged the changes to 1 file from branch textslash/w1 into main."; ev.Status != contract.StatusOK || !strings.HasPrefix(ev.Text, want) {
		t.Fatalf("approve: %q %q; want %q", ev.Status, ev.Text, want)
	}
	if f := gitIn(t, w.checkout, "show", "main:f.txt"); f != "x" {
		t.Errorf("f.txt on main: %q; want x", f)
	}
	if b, err := os.ReadFile(filepath.Join(w.checkout, "f.txt")); err != nil || string(b) != "x\n" {
		t.Errorf("f.txt in the checkout: %q %v", b, err)
	}
	if msg := gitIn(t, w.checkout, "log", "-1", "--format=%s%n%b", "main"); msg != "echo x > f.txt && pwd && git rev-parse --abbrev-ref HEAD\nApproved from textslash." {
		t.Errorf("main's last commit %q; want the request as its subject", msg)
	}
	w.untouched("after approve", "")
	w.gone("after approve")
	if b := w.branches(); b != "textslash/w1" {
		t.Errorf("branches %q; want textslash/w1 kept", b)
	}
	if _, err := os.Lstat(filepath.Join(w.workspaces, ".home", w.u.Key(), ".textslash-worktree.app")); err == nil {
		t.Error("the note of the approval request's branch is still there")
	}
}

// reject removes the worktree and its branch; the checkout, with its
// unrelated change, stays as it was.
func TestWorktreeReject(t *testing.T) {
	w := newWorktreeEnv(t, Config{}, nil)
	askedOn(t, w.message("w1", "echo x > f.txt && echo y >> app.txt", true), "textslash/w1", "f.txt")
	ev := w.answer("r1", contract.ActionReject)
	if want := "Discarded branch textslash/w1 (2 files); your checkout is untouched."; ev.Status != contract.StatusOK || ev.Text != want {
		t.Fatalf("reject: %q %q; want %q", ev.Status, ev.Text, want)
	}
	w.untouched("after reject", "f.txt")
	if msg := gitIn(t, w.checkout, "log", "-1", "--format=%s"); msg != "init" {
		t.Errorf("checkout's last commit %q; want init", msg)
	}
	w.gone("after reject")
	if b := w.branches(); b != "" {
		t.Errorf("branches %q; want none", b)
	}
}

// A run that leaves nothing leaves no worktree nor branch; one cancelled
// with changes keeps them, and the next message goes on on that
// branch; approve and reject act on what the approval request was about:
// after a message with branches off, on the checkout, the branch left as
// it is.
func TestWorktreeKept(t *testing.T) {
	w := newWorktreeEnv(t, Config{}, nil)
	if ev := w.message("w1", "echo hello", true); ev.Status != contract.StatusOK || ev.Approval || ev.Text != "hello" {
		t.Errorf("run without changes: %q approval %t %q; want ok, hello, no approval", ev.Status, ev.Approval, ev.Text)
	}
	w.gone("after a run without changes")
	if b := w.branches(); b != "" {
		t.Errorf("branches after a run without changes: %q; want none", b)
	}

	// Cancelled once it has written f.txt.
	w.send(contract.Job{ID: "w2", User: w.u, Project: "app", Text: "echo x > f.txt; sleep 30", Worktree: true})
	natstest.CheckFor(t, runnerWait, runnerPoll, func() error {
		// Written, not only made: the shell makes the file before echo writes.
		if b, err := os.ReadFile(filepath.Join(w.tree, "f.txt")); err != nil || string(b) != "x\n" {
			return fmt.Errorf("f.txt = %q, %v", b, err)
		}
		return nil
	})
	if err := w.js.Conn().Publish(contract.CancelSubject(w.u), []byte("w2")); err != nil {
		t.Fatal(err)
	}
	if ev := w.waitDone(w.u, "w2", runnerWait); ev.Status != contract.StatusCanceled || ev.Approval {
		t.Fatalf("cancelled run: %q approval %t %q", ev.Status, ev.Approval, ev.Text)
	}
	if _, err := os.Stat(filepath.Join(w.tree, "f.txt")); err != nil {
		t.Fatalf("the cancelled run's worktree: %v; want it kept with f.txt", err)
	}
	ev := w.message("w3", "echo y > g.txt && cat f.txt", true)
	askedOn(t, ev, "textslash/w2", "g.txt")
	if !strings.HasPrefix(ev.Text, "x\n") || !strings.Contains(ev.Text, "A f.txt") {
		t.Errorf("the next message: %q; want it on textslash/w2, with f.txt", ev.Text)
	}

	// Branches off: the checkout's changes, approved on the checkout.
	w.local = ""
	ev = w.message("c1", "echo more >> app.txt", false)
	if !ev.Approval || !strings.HasSuffix(ev.Text, MsgApprove) {
		t.Fatalf("branches off: approval %t %q; want the checkout's approval request", ev.Approval, ev.Text)
	}
	if ev := w.answer("a1", contract.ActionApprove); !strings.HasPrefix(ev.Text, "Committed the changes to 2 files on branch textslash/a1.") {
		t.Fatalf("approve of the checkout's changes: %q", ev.Text)
	}
	if _, err := os.Stat(filepath.Join(w.tree, "g.txt")); err != nil {
		t.Fatalf("the branch in progress after approving the checkout: %v; want it kept", err)
	}

	// Branches on again: the branch in progress, merged into the
	// checkout's branch, now textslash/a1.
	ev = w.message("w4", "true", true)
	if !ev.Approval || !strings.Contains(ev.Text, "The changes are on branch textslash/w2; your checkout is untouched. Reply approve to merge them into textslash/a1") {
		t.Fatalf("branches on again: approval %t %q", ev.Approval, ev.Text)
	}
	if ev := w.answer("a2", contract.ActionApprove); !strings.HasPrefix(ev.Text, "Merged the changes to 2 files from branch textslash/w2 into textslash/a1.") {
		t.Fatalf("approve: %q", ev.Text)
	}
	w.gone("after approve")
	if b := w.branches(); b != "textslash/a1\ntextslash/w2" {
		t.Errorf("branches %q", b)
	}
	if st := gitIn(t, w.checkout, "status", "--porcelain"); st != "" {
		t.Errorf("checkout's status %q; want clean", st)
	}
}

// A branch that conflicts with the checkout's, or a checkout with
// uncommitted changes whose branch moved on, is committed and kept, not
// merged; the checkout is left as it was.
func TestWorktreeNotMerged(t *testing.T) {
	tests := []struct {
		name   string
		dirty  bool
		reason string
	}{
		{"conflict", false, "it conflicts with main; merge it yourself"},
		{"dirty checkout", true, "your checkout has uncommitted changes, so only a fast-forward merge was tried, and main has moved on or the changes overlap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorktreeEnv(t, Config{}, nil)
			if !tt.dirty {
				gitIn(t, w.checkout, "checkout", "-q", "--", "README.md")
				w.local = ""
			}
			ev := w.message("w1", "echo from the branch > app.txt", true)
			if !ev.Approval || !strings.Contains(ev.Text, "M app.txt") {
				t.Fatalf("run: %q", ev.Text)
			}
			if err := os.WriteFile(filepath.Join(w.checkout, "app.txt"), []byte("from main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			gitIn(t, w.checkout, "commit", "-q", "-m", "meanwhile", "--", "app.txt")
			head := gitIn(t, w.checkout, "rev-parse", "HEAD")
			ev = w.answer("a1", contract.ActionApprove)
			if want := "Committed the changes to 1 file on branch textslash/w1 (kept: " + tt.reason + ")."; !strings.HasPrefix(ev.Text, want) {
				t.Fatalf("approve: %q; want %q", ev.Text, want)
			}
			if h := gitIn(t, w.checkout, "rev-parse", "HEAD"); h != head {
				t.Errorf("checkout's HEAD moved")
			}
			if _, err := os.Stat(filepath.Join(w.checkout, ".git", "MERGE_HEAD")); err == nil {
				t.Error("a merge is left under way")
			}
			w.untouched("after approve", "")
			w.gone("after approve")
			if f := gitIn(t, w.checkout, "show", "textslash/w1:app.txt"); f != "from the branch" {
				t.Errorf("app.txt on the branch: %q", f)
			}
		})
	}
}

// With branches on, a message in a project that is not a git repository
// with a commit runs in the checkout and says why.
func TestWorktreeNotRepository(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute})
	u := e.user(contract.ChannelWeb, "alice")
	checkout := filepath.Join(e.workspaces, u.Key())
	want := "Not on a branch of its own: default is not a git repository with a commit."
	for i, script := range []string{"pwd", "git init -q && pwd", "pwd"} { // no repository, then one without a commit
		ev := e.run(contract.Job{ID: fmt.Sprint("m", i), User: u, Text: script, Worktree: true})
		if ev.Status != contract.StatusOK || ev.Text != checkout+"\n\n"+want {
			t.Errorf("%s: %q %q; want it run in %s, saying %q", script, ev.Status, ev.Text, checkout, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(e.workspaces, ".worktrees", u.Key(), "default")); err == nil {
		t.Error("a worktree was made")
	}
}

// As an unprivileged agent user, in the sandbox and not, with the
// person's disk and without: git works in the worktree (the run reaches
// the checkout's git directory, not its files), approve merges, reject
// deletes, a run without changes leaves nothing.
func TestWorktreeAsAgentUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	au := testAgentUser(t)
	for _, c := range []struct {
		sandboxed, disk bool
	}{{false, false}, {true, false}, {false, true}, {true, true}} {
		sandboxed := c.sandboxed
		name := map[bool]string{false: "unconfined", true: "sandboxed"}[sandboxed]
		if c.disk {
			name += "-disk"
		}
		t.Run(name, func(t *testing.T) {
			cfg := Config{}
			if c.disk {
				needDisks(t)
				cfg.DiskQuota = testDiskQuota // the person's directories are links to it
			}
			if sandboxed {
				if err := (&sandbox.Sandbox{}).Probe(au); err != nil {
					t.Skip(err)
				}
				cfg.Sandbox = &sandbox.Sandbox{}
			}
			w := newWorktreeEnv(t, cfg, au)
			script := fmt.Sprintf(`pwd; id -u; echo x > f.txt; git status --porcelain; git add -A && git reset -q && echo index-ok; git log -1 --format=%%s; test -e %s/app.txt && echo sees-checkout || echo no-checkout; exit 0`, w.checkout)
			ev := w.message("w1", script, true)
			t.Logf("run in the worktree:\n%s", ev.Text)
			see := "sees-checkout"
			if sandboxed {
				see = "no-checkout"
			}
			if want := fmt.Sprintf("%s\n%d\n?? f.txt\nindex-ok\ninit\n%s\n", w.tree, au.UID, see); !strings.HasPrefix(ev.Text, want) {
				t.Errorf("run: %q; want it to start %q", ev.Text, want)
			}
			askedOn(t, ev, "textslash/w1", "f.txt")
			if ev := w.answer("a1", contract.ActionApprove); !strings.HasPrefix(ev.Text, "Merged the changes to 1 file from branch textslash/w1 into main.") {
				t.Fatalf("approve: %q %q", ev.Status, ev.Text)
			}
			if f := gitIn(t, w.checkout, "show", "main:f.txt"); f != "x" {
				t.Errorf("f.txt on main: %q", f)
			}
			w.untouched("after approve", "")
			w.gone("after approve")

			askedOn(t, w.message("w2", "echo y > g.txt", true), "textslash/w2", "g.txt")
			if ev := w.answer("r1", contract.ActionReject); ev.Text != "Discarded branch textslash/w2 (1 file); your checkout is untouched." {
				t.Fatalf("reject: %q %q", ev.Status, ev.Text)
			}
			w.untouched("after reject", "g.txt")
			w.gone("after reject")

			if ev := w.message("w3", "cat f.txt", true); ev.Text != "x" || ev.Approval {
				t.Errorf("run without changes: %q approval %t", ev.Text, ev.Approval)
			}
			w.gone("after a run without changes")
			if b := w.branches(); b != "textslash/w1" {
				t.Errorf("branches %q; want textslash/w1", b)
			}
			out, err := exec.Command("stat", "-L", "-c", "%u", filepath.Dir(w.tree)).Output()
			if err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(au.UID) {
				t.Errorf("the person's worktrees directory belongs to %s %v; want the agent user", out, err)
			}
		})
	}
}
