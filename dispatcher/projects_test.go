package dispatcher_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
	"github.com/textslash/textslash/natstest"
)

// registerProjects writes u's projects as the runner does.
func (b *bench) registerProjects(u contract.User, names ...string) {
	b.t.Helper()
	reg := contract.Projects{}
	for _, n := range names {
		reg.List = append(reg.List, contract.Project{Name: n, URL: "https://example.com/" + n + ".git", Branch: "main"})
	}
	data, err := contract.Encode(&reg)
	if err != nil {
		b.t.Fatal(err)
	}
	kv, err := b.js.KeyValue(b.t.Context(), contract.BucketProjects)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := kv.Put(b.t.Context(), u.Key(), data); err != nil {
		b.t.Fatal(err)
	}
}

// jobWhenTaken waits until the runner has taken job id of u.
func (b *bench) jobWhenTaken(u contract.User, id string) contract.Job {
	b.t.Helper()
	var job contract.Job
	natstest.CheckFor(b.t, wait, poll, func() error {
		for _, j := range b.jobsOf(u) {
			if j.ID == id {
				job = j
				return nil
			}
		}
		return fmt.Errorf("job %s not taken", id)
	})
	return job
}

// waitQueued waits until message id of u waits in the queue.
func (b *bench) waitQueued(u contract.User, id string) {
	b.t.Helper()
	natstest.CheckFor(b.t, wait, poll, func() error {
		if !slices.Contains(b.queued(u), id) {
			return fmt.Errorf("queue %q lacks %s", b.queued(u), id)
		}
		return nil
	})
}

// A person with two projects: messages run in the current one, changes
// awaiting approval wait in their project while the person works in the
// other, and come back when they return to it.
func TestProjectsKeepTheirApprovals(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "projects")
	b.registerProjects(u, "web", "api")

	if got := b.say(u, "k1", "use web"); len(got) != 1 || got[0] != fmt.Sprintf(fsm.MsgUse, "web") {
		t.Errorf("use web: notices %q", got)
	}
	b.send(u, "m1", "make the button blue")
	if job := b.jobWhenTaken(u, "m1"); job.Project != "web" {
		t.Errorf("m1 runs in project %q; want web", job.Project)
	}
	b.finish(u, "m1", true)
	b.waitState(u, contract.StateAwaitingApproval, "m1")

	if got := b.say(u, "k2", "use api"); len(got) != 1 || !strings.Contains(got[0], "The changes in web wait for your approval") {
		t.Errorf("use api while web awaits approval: notices %q", got)
	}
	b.waitState(u, contract.StateIdle, "")
	if st, _ := b.state(u); st.Project != "api" || st.Parked["web"] != "m1" {
		t.Errorf("after use api: project %q, parked %v; want api, web=m1", st.Project, st.Parked)
	}
	if s := b.schedules(u); len(s) != 0 {
		t.Errorf("approval timeouts armed while web's changes are parked: %+v", s)
	}
	b.send(u, "m2", "add an endpoint")
	if job := b.jobWhenTaken(u, "m2"); job.Project != "api" {
		t.Errorf("m2 runs in project %q; want api", job.Project)
	}
	b.finish(u, "m2", false)
	b.waitState(u, contract.StateIdle, "")

	list := b.say(u, "k3", "projects")
	if len(list) != 1 || !strings.Contains(list[0], "* api (main)") || !strings.Contains(list[0], "  web (main), changes wait for your approval") ||
		!strings.Contains(list[0], "  default") {
		t.Errorf("projects: %q", list)
	}
	if got := b.say(u, "k4", "use web"); len(got) != 2 || !strings.Contains(got[1], "changes wait for your approval") {
		t.Errorf("use web: notices %q", got)
	}
	b.waitState(u, contract.StateAwaitingApproval, "m1")
	if s := b.schedules(u); len(s) != 1 || s[0].JobID != "m1" {
		t.Errorf("approval timeout after coming back to web: %+v; want m1's", s)
	}
	b.send(u, "k5", "approve")
	if job := b.jobWhenTaken(u, "k5"); job.Action != contract.ActionApprove || job.Project != "web" {
		t.Errorf("approve job %+v; want approve in web", job)
	}
}

// "use" of something that is not a project is a message for the agent;
// a use while messages wait is refused (they run where they were sent).
func TestUseIsAMessageUnlessAProject(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "usepnpm")
	b.registerProjects(u, "web")
	b.send(u, "m1", "use pnpm")
	if job := b.jobWhenTaken(u, "m1"); job.Text != "use pnpm" || job.Action != "" {
		t.Errorf("use pnpm: job %+v; want a message", job)
	}
	b.send(u, "m2", "run the tests")
	b.waitQueued(u, "m2")
	if got := b.say(u, "k1", "use web"); len(got) != 1 || got[0] != fmt.Sprintf(fsm.MsgUseQueued, "default", "web") {
		t.Errorf("use while a message waits: %q", got)
	}
	if st, _ := b.state(u); st.Project != "" {
		t.Errorf("project %q after a refused use", st.Project)
	}
}

// clone is checked before it is queued, and reaches the runner as a clone
// job naming the URL and the project.
func TestCloneJob(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "cloner")
	b.registerProjects(u, "web")
	for _, c := range []struct{ text, want string }{
		{"clone https://example.com/x/web.git", "You have a project called web already"},
		{"clone https://example.com/x/site.git default", "default is the name of your first workspace"},
		{"clone ext::sh%20-c%20touch%20/tmp/pwned", "not a repository URL"},
		{"clone https://example.com/x/y.git Bad/Name", "cannot name a project"},
	} {
		if got := b.say(u, "r-"+fmt.Sprint(len(c.text)), c.text); len(got) != 1 || !strings.Contains(got[0], c.want) {
			t.Errorf("%q: notices %q; want %q", c.text, got, c.want)
		}
	}
	b.send(u, "c1", "clone https://example.com/x/Site.git")
	if job := b.jobWhenTaken(u, "c1"); job.Action != contract.ActionClone || job.Text != "https://example.com/x/Site.git site" {
		t.Errorf("clone job %+v; want action clone, text \"https://example.com/x/Site.git site\"", job)
	}
	// Queued behind a run, it is still a clone when it starts.
	b.send(u, "c2", "clone git@example.com:x/other.git mine")
	b.waitQueued(u, "c2")
	b.finish(u, "c1", false)
	if job := b.jobWhenTaken(u, "c2"); job.Action != contract.ActionClone || job.Text != "git@example.com:x/other.git mine" {
		t.Errorf("queued clone job %+v", job)
	}
}

// With branches on, each message's job asks for a branch of its own; an
// approval's job does not (it acts on the branch of the run it answers).
func TestBranchesSetting(t *testing.T) {
	b := newBench(t, dispatcher.Config{})
	u := user(t, "brancher")
	if got := b.say(u, "k1", "branches on"); len(got) != 1 || got[0] != fsm.MsgBranchesOn {
		t.Errorf("branches on: %q", got)
	}
	b.send(u, "m1", "make it blue")
	if job := b.jobWhenTaken(u, "m1"); !job.Worktree {
		t.Errorf("job %+v; want it on a branch of its own", job)
	}
	b.finish(u, "m1", true)
	b.waitState(u, contract.StateAwaitingApproval, "m1")
	b.send(u, "k2", "reject")
	if job := b.jobWhenTaken(u, "k2"); job.Worktree || job.Action != contract.ActionReject {
		t.Errorf("reject job %+v", job)
	}
	b.finish(u, "k2", false)
	b.say(u, "k3", "branches off")
	b.send(u, "m2", "make it red")
	if job := b.jobWhenTaken(u, "m2"); job.Worktree {
		t.Errorf("job %+v after branches off; want it in the checkout", job)
	}
}
