package main

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
)

// sharedRepos is a directory for bare repositories that runs clone from
// with a file:// URL (the instance is given TEXTSLASH_SANDBOX_SHARE=it):
// its own directory, readable, belonging to the agent user (git refuses a
// repository of another user's). A git host on this machine's loopback is
// out of a run's reach, as every loopback server is (runner/sandbox: a
// clone has a network of its own, as homes have).
func sharedRepos(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repos")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(filepath.Dir(dir)), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// giveRepos hands dir, and all in it, to the agent user name ("": none).
func giveRepos(t *testing.T, dir, name string) {
	t.Helper()
	if name == "" {
		return
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		t.Fatal(err)
	}
}

// bareRepo makes dir/<name>.git holding one commit of files.
func bareRepo(t *testing.T, dir, name string, files map[string]string) {
	t.Helper()
	work := t.TempDir()
	run := func(d string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = d
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	run(work, "init", "-q", "-b", "main")
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(work, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(work, "add", ".")
	run(work, "-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qm", "first")
	run(dir, "clone", "-q", "--bare", work, name+".git")
}

// Projects with the real Claude Code CLI: a clone, each
// project's own session (the model sees only that project's earlier
// turns), changes awaiting approval set aside while the person works in
// the other project and back when they return.
func TestClaudeProjects(t *testing.T) {
	repos := sharedRepos(t)
	bareRepo(t, repos, "site", map[string]string{"index.html": "<h1>hi</h1>\n"})
	giveRepos(t, repos, claudetest.AgentUser(t))
	host := "file://" + repos
	model := claudetest.NewModel(t,
		claudetest.Text("Noted."),
		claudetest.ToolUse("Bash", map[string]any{"command": "ls > files.txt", "description": "list the files"}),
		claudetest.Text("Listed them in files.txt."),
		claudetest.Text("You said swordfish."),
		claudetest.Text("You asked me to list the files."),
	)
	inst := startClaude(t, model, "TEXTSLASH_SANDBOX_SHARE="+repos) // the clone reads the repository there
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := inst.newChat(t)
	events := c.events(ctx)
	// state waits until the dispatcher has moved the person to state (a
	// run's done event reaches the chat before the dispatcher handles it).
	state := func(to string) {
		t.Helper()
		waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "state" && ev.Event.To == to })
	}
	notice := func(text string) string {
		t.Helper()
		id := c.send(text)
		return waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "notice" && ev.Event.JobID == id }).Event.Text
	}

	c.ask(events, "remember swordfish")
	if got := c.ask(events, "clone "+host+"/site.git"); !strings.Contains(got.Text, "into project site (branch main)") {
		t.Fatalf("clone: %q", got.Text)
	}
	if got := notice("use site"); !strings.Contains(got, "Now in project site") {
		t.Errorf("use site: %q", got)
	}
	got := c.ask(events, "list the files")
	state(contract.StateAwaitingApproval)
	if !got.Approval || !strings.Contains(got.Text, "files.txt") {
		t.Errorf("run in site: %q (approval %v); want files.txt awaiting approval", got.Text, got.Approval)
	}
	site := filepath.Join(inst.Data, "workspaces", ".projects", c.User.Key(), "site")
	if b, err := os.ReadFile(filepath.Join(site, "files.txt")); err != nil || !strings.Contains(string(b), "index.html") {
		t.Errorf("files.txt in the project: %q, %v; want the clone's files listed", b, err)
	}
	if turns := userTurns(model); containsAny(turns, "swordfish") {
		t.Errorf("first message in site: the model saw %q; want a session of its own", turns)
	}

	if got := notice("use default"); !strings.Contains(got, "The changes in site wait for your approval") {
		t.Errorf("use default while site awaits approval: %q", got)
	}
	c.ask(events, "what did I say?")
	state(contract.StateIdle)
	if turns := userTurns(model); !mentionsAll(turns, "remember swordfish") || containsAny(turns, "list the files") {
		t.Errorf("back in default: the model saw %q; want the default project's session", turns)
	}
	if _, err := os.Stat(filepath.Join(site, "files.txt")); err != nil {
		t.Errorf("site's change awaiting approval is gone: %v", err)
	}
	if list := notice("projects"); !strings.Contains(list, "* default") || !strings.Contains(list, "site (main), changes wait for your approval") {
		t.Errorf("projects: %q", list)
	}

	// Back in site, its changes await approval again (the state event
	// comes before the use's notices).
	c.send("use site")
	state(contract.StateAwaitingApproval)
	if got := c.ask(events, "reject"); !strings.Contains(got.Text, "Discarded") {
		t.Errorf("reject in site: %q", got.Text)
	}
	if _, err := os.Stat(filepath.Join(site, "files.txt")); err == nil {
		t.Error("files.txt is still in site after reject")
	}
	c.ask(events, "what did I ask?")
	if turns := userTurns(model); !mentionsAll(turns, "list the files") || containsAny(turns, "swordfish") {
		t.Errorf("back in site: the model saw %q; want site's session", turns)
	}
}
