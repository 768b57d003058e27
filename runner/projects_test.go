package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/workspace"
)

// send publishes j as the dispatcher does (ID, User and At filled in by
// the caller or here).
func (e *runnerEnv) send(j contract.Job) {
	e.t.Helper()
	if j.At.IsZero() {
		j.At = time.Now().UTC()
	}
	data, err := contract.Encode(&j)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.js.Publish(e.t.Context(), contract.JobSubject(j.User), data, jetstream.WithMsgID(contract.MsgID(j.User, j.ID, "job"))); err != nil {
		e.t.Fatalf("publish job %s: %v", j.ID, err)
	}
}

// run sends j and waits for its done event.
func (e *runnerEnv) run(j contract.Job) contract.Event {
	e.t.Helper()
	e.send(j)
	return e.waitDone(j.User, j.ID, runnerWait)
}

// clone runs "clone <url> <name>" as the dispatcher sends it.
func (e *runnerEnv) clone(u contract.User, id, url, name string) contract.Event {
	e.t.Helper()
	return e.run(contract.Job{ID: id, User: u, Action: contract.ActionClone, Text: url + " " + name})
}

// registry is u's registry of projects, and its revision (0: none).
func (e *runnerEnv) registry(u contract.User) (contract.Projects, uint64) {
	e.t.Helper()
	kv, err := e.js.KeyValue(e.t.Context(), contract.BucketProjects)
	if err != nil {
		e.t.Fatal(err)
	}
	entry, err := kv.Get(e.t.Context(), u.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return contract.Projects{}, 0
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var p contract.Projects
	if err := contract.Decode(entry.Value(), &p); err != nil {
		e.t.Fatalf("registry of %s: %v: %s", u, err, entry.Value())
	}
	return p, entry.Revision()
}

// projectDir is where u's project name lives.
func (e *runnerEnv) projectDir(u contract.User, name string) string {
	return filepath.Join(e.workspaces, ".projects", u.Key(), name)
}

// startWithAgent runs a Runner whose agent is a until the test ends.
func (e *runnerEnv) startWithAgent(cfg Config, a agent.Agent) {
	e.t.Helper()
	cfg.Agent, cfg.Workspaces = AgentShell, e.workspaces
	r, err := New(cfg, e.js, zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.ErrorLevel))
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	r.agent = a
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- r.Run(ctx) }()
	e.t.Cleanup(func() {
		cancel()
		if err := <-ended; err != nil {
			e.t.Errorf("Run: %v", err)
		}
	})
}

// gitIn runs git in dir and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "safe.directory=*"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// bareRepo makes a bare repository (branch main, with README.md and
// app.txt) made with git init --bare and a push, and returns its path.
func bareRepo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	bare := filepath.Join(root, "app.git")
	gitIn(t, root, "init", "-q", "--bare", "--initial-branch=main", bare)
	work := filepath.Join(root, "work")
	gitIn(t, root, "init", "-q", "--initial-branch=main", work)
	for name, text := range map[string]string{"README.md": "# app\n", "app.txt": "hello from app\n"} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, work, "add", ".")
	gitIn(t, work, "commit", "-q", "-m", "init")
	gitIn(t, work, "push", "-q", bare, "main")
	return bare
}

// A clone job clones the repository into a new project: its files are in
// the project's workspace, it is in the registry (URL, branch), a run in
// it sees them, and a second clone with the same name is refused.
func TestProjectClone(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute})
	u := e.user(contract.ChannelWeb, "alice")
	url := "file://" + bareRepo(t)

	ev := e.clone(u, "c1", url, "app")
	if want := fmt.Sprintf(workspace.MsgCloned, url, "app", "main", "app"); ev.Status != contract.StatusOK || ev.Text != want {
		t.Fatalf("clone: got status %q text %q; want ok %q", ev.Status, ev.Text, want)
	}
	dir := e.projectDir(u, "app")
	if data, err := os.ReadFile(filepath.Join(dir, "app.txt")); err != nil || string(data) != "hello from app\n" {
		t.Errorf("app.txt in %s: got %q, %v; want the repository's file", dir, data, err)
	}
	reg, _ := e.registry(u)
	if len(reg.List) != 1 || reg.V != contract.Version {
		t.Fatalf("registry %+v; want one project, v%d", reg, contract.Version)
	}
	if p := reg.List[0]; p.Name != "app" || p.URL != url || p.Branch != "main" || p.At.IsZero() {
		t.Errorf("registry entry %+v; want app, %s, branch main, a time", p, url)
	}

	ev = e.run(contract.Job{ID: "m1", User: u, Project: "app", Text: "pwd; cat app.txt"})
	if want := dir + "\nhello from app"; ev.Status != contract.StatusOK || ev.Text != want {
		t.Errorf("run in app: got status %q text %q; want ok %q", ev.Status, ev.Text, want)
	}

	if err := os.WriteFile(filepath.Join(dir, "mine.txt"), []byte("work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev = e.clone(u, "c2", url, "app")
	if want := fmt.Sprintf(workspace.MsgProjectTaken, "app"); ev.Status != contract.StatusError || ev.Text != want {
		t.Errorf("second clone as app: got status %q text %q; want error %q", ev.Status, ev.Text, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "mine.txt")); err != nil {
		t.Errorf("the refused clone touched the project: %v", err)
	}
	if reg, _ := e.registry(u); len(reg.List) != 1 {
		t.Errorf("registry after the refused clone: %+v; want the one project", reg)
	}
}

// Clones that cannot be made are refused in plain words, leave no
// directory behind and no entry in the registry, and never show a
// password or token.
func TestProjectCloneRefused(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute})
	url := "file://" + bareRepo(t)
	pwned := filepath.Join(t.TempDir(), "pwned")
	// A server asking for a password: git must not wait for one.
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(private.Close)
	tests := []struct {
		name, text string
		want       []string // in the reply
		secret     string   // never in the reply
		full       bool     // a person already holding ProjectsKept projects
	}{
		{"unreachable path", "file:///nonexistent/repo.git gone",
			[]string{"Could not clone file:///nonexistent/repo.git: fatal: ", "does not appear to be a git repository"}, "", false},
		{"password", "https://alice:s3cret-pw@127.0.0.1:1/repo.git repo",
			[]string{"https://xxxxx@127.0.0.1:1/repo.git is not a repository URL git can clone"}, "s3cret-pw", false},
		{"token as user", "https://ghp_T0KEN@127.0.0.1:1/repo.git repo",
			[]string{"https://xxxxx@127.0.0.1:1/repo.git is not a repository URL git can clone"}, "ghp_T0KEN", false},
		{"asks for a password", private.URL + "/owner/private.git private",
			[]string{"Could not clone " + private.URL + "/owner/private.git: fatal: could not read Username", "terminal prompts disabled"}, "", false},
		{"ext transport", "ext::touch%20" + pwned + " x",
			[]string{"is not a repository URL git can clone"}, "", false},
		{"not a URL", "/just/a/path x", []string{"is not a repository URL git can clone"}, "", false},
		{"default", url + " default", []string{workspace.MsgCloneDefault}, "", false},
		{"bad name", url + " Bad.Name", []string{`"Bad.Name" cannot name a project`}, "", false},
		{"too many", url + " one-more", []string{fmt.Sprintf(workspace.MsgTooManyProjects, contract.ProjectsKept)}, "", true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := e.user(contract.ChannelWeb, fmt.Sprint("u", i))
			if tt.full {
				kv, err := e.js.KeyValue(t.Context(), contract.BucketProjects)
				if err != nil {
					t.Fatal(err)
				}
				p := contract.Projects{V: 1, List: []contract.Project{{Name: contract.DefaultProject, Branch: "main"}}}
				for n := range contract.ProjectsKept {
					p.List = append(p.List, contract.Project{Name: fmt.Sprint("p", n)})
				}
				data, err := contract.Encode(&p)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := kv.Put(t.Context(), u.Key(), data); err != nil {
					t.Fatal(err)
				}
			}
			_, revBefore := e.registry(u)
			ev := e.run(contract.Job{ID: "c", User: u, Action: contract.ActionClone, Text: tt.text})
			if ev.Status != contract.StatusError {
				t.Errorf("status %q; want error (%q)", ev.Status, ev.Text)
			}
			for _, w := range tt.want {
				if !strings.Contains(ev.Text, w) {
					t.Errorf("reply %q; want it to say %q", ev.Text, w)
				}
			}
			if tt.secret != "" && strings.Contains(ev.Text, tt.secret) {
				t.Errorf("reply %q shows the secret %q", ev.Text, tt.secret)
			}
			if entries, err := os.ReadDir(filepath.Join(e.workspaces, ".projects", u.Key())); err == nil && len(entries) > 0 {
				t.Errorf("left behind in the projects directory: %v", entries)
			}
			if _, rev := e.registry(u); rev != revBefore {
				t.Errorf("registry written (revision %d → %d)", revBefore, rev)
			}
		})
	}
	if _, err := os.Stat(pwned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ext:: transport ran a command: stat %s: %v", pwned, err)
	}
}

// A clone larger than ProjectMaxBytes is removed, and the person told
// both sizes.
func TestProjectCloneTooLarge(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute, ProjectMaxBytes: 100})
	u := e.user(contract.ChannelWeb, "alice")
	url := "file://" + bareRepo(t)
	ev := e.clone(u, "c1", url, "app")
	if ev.Status != contract.StatusError || !strings.HasPrefix(ev.Text, "Not kept: "+url+" takes ") ||
		!strings.Contains(ev.Text, "more than the 100 bytes a project may take here, so the clone was removed.") {
		t.Errorf("got status %q text %q; want error saying the clone's size and the limit of 100 bytes", ev.Status, ev.Text)
	}
	if _, err := os.Stat(e.projectDir(u, "app")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the clone's directory: stat %v; want it removed", err)
	}
	if reg, rev := e.registry(u); rev != 0 {
		t.Errorf("registry %+v; want none", reg)
	}
}

// Jobs run in their project's workspace; the default one stays where it
// was. A project not on this runner is not made up.
func TestProjectWorkspaces(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute})
	u := e.user(contract.ChannelWeb, "alice")
	url := "file://" + bareRepo(t)
	for _, name := range []string{"a", "b"} {
		if ev := e.clone(u, "clone-"+name, url, name); ev.Status != contract.StatusOK {
			t.Fatalf("clone %s: %q", name, ev.Text)
		}
	}
	home := filepath.Join(e.workspaces, ".home", u.Key())
	tests := []struct {
		project, want string
		status        string
	}{
		{"a", e.projectDir(u, "a") + "\n" + home, contract.StatusOK},
		{"b", e.projectDir(u, "b") + "\n" + home, contract.StatusOK},
		{"", filepath.Join(e.workspaces, u.Key()) + "\n" + home, contract.StatusOK},
		{contract.DefaultProject, filepath.Join(e.workspaces, u.Key()) + "\n" + home, contract.StatusOK},
		{"c", fmt.Sprintf(workspace.MsgNoProject, "c", "c"), contract.StatusError},
		{"../b", fmt.Sprintf(workspace.MsgNoProject, "../b", "../b"), contract.StatusError},
	}
	for i, tt := range tests {
		ev := e.run(contract.Job{ID: fmt.Sprint("m", i), User: u, Project: tt.project, Text: `pwd; echo "$HOME"`})
		if ev.Status != tt.status || ev.Text != tt.want {
			t.Errorf("project %q: got status %q text %q; want %s %q", tt.project, ev.Status, ev.Text, tt.status, tt.want)
		}
	}
	if _, err := os.Stat(e.projectDir(u, "c")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a job for project c made its directory: %v", err)
	}
}

// sessionAgent stands in for Claude Code's sessions: each run says the
// session it resumed and starts one named for its job.
type sessionAgent struct{}

func (sessionAgent) Run(_ context.Context, r *agent.Run) (agent.Result, error) {
	resumed := r.SessionID
	if resumed == "" {
		resumed = "none"
	}
	return agent.Result{Text: "resumed " + resumed, SessionID: "s-" + r.Job.ID}, nil
}

// Each project resumes its own session; "new" starts a fresh one in its
// project only.
func TestProjectSessions(t *testing.T) {
	e := newRunnerEnv(t)
	e.startWithAgent(Config{Timeout: time.Minute}, sessionAgent{})
	u := e.user(contract.ChannelWeb, "alice")
	for _, name := range []string{"a", "b"} {
		if ev := e.clone(u, "clone-"+name, "file://"+bareRepo(t), name); ev.Status != contract.StatusOK {
			t.Fatalf("clone %s: %q", name, ev.Text)
		}
	}
	steps := []struct {
		id, project string
		new         bool
		want        string
	}{
		{"d1", "", false, "resumed none"},
		{"a1", "a", false, "resumed none"},
		{"a2", "a", false, "resumed s-a1"},
		{"d2", "", false, "resumed s-d1"},
		{"b1", "b", false, "resumed none"},
		{"a3", "a", true, "resumed none"},
		{"d3", "", false, "resumed s-d2"},
		{"b2", "b", false, "resumed s-b1"},
		{"a4", "a", false, "resumed s-a3"},
	}
	for _, s := range steps {
		ev := e.run(contract.Job{ID: s.id, User: u, Project: s.project, NewSession: s.new, Text: "hello"})
		if ev.Status != contract.StatusOK || ev.Text != s.want {
			t.Errorf("%s in %q (new %t): got %q %q; want ok %q", s.id, s.project, s.new, ev.Status, ev.Text, s.want)
		}
	}
	home := filepath.Join(e.workspaces, ".home", u.Key())
	for file, want := range map[string]string{".textslash-session": "s-d3", ".textslash-session.a": "s-a4", ".textslash-session.b": "s-b2"} {
		if data, err := os.ReadFile(filepath.Join(home, file)); err != nil || strings.TrimSpace(string(data)) != want {
			t.Errorf("%s: got %q, %v; want %q", file, data, err, want)
		}
	}
}

// approve in project a commits a's changes there and leaves b's
// uncommitted changes alone; the registry follows each project's branch.
func TestProjectApprove(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute})
	u := e.user(contract.ChannelWeb, "alice")
	url := "file://" + bareRepo(t)
	for _, name := range []string{"a", "b"} {
		if ev := e.clone(u, "clone-"+name, url, name); ev.Status != contract.StatusOK {
			t.Fatalf("clone %s: %q", name, ev.Text)
		}
		ev := e.run(contract.Job{ID: "edit-" + name, User: u, Project: name, Text: "echo more from " + name + " >> app.txt && echo edited"})
		if !ev.Approval || !strings.Contains(ev.Text, "M app.txt (+1 −0)") {
			t.Fatalf("edit in %s: approval %t, text %q; want an approval request for app.txt", name, ev.Approval, ev.Text)
		}
	}
	ev := e.run(contract.Job{ID: "approve-a-0001", User: u, Project: "a", Action: contract.ActionApprove})
	if !strings.HasPrefix(ev.Text, "Committed the changes to 1 file on branch textslash/approve-a-00") {
		t.Fatalf("approve in a: got %q %q; want the commit", ev.Status, ev.Text)
	}
	a, b := e.projectDir(u, "a"), e.projectDir(u, "b")
	if st := gitIn(t, a, "status", "--porcelain"); st != "" {
		t.Errorf("a after approve: status %q; want clean", st)
	}
	if msg := gitIn(t, a, "log", "-1", "--format=%s"); msg != "echo more from a >> app.txt && echo edited" {
		t.Errorf("a's last commit: %q; want a's request", msg)
	}
	if st := gitIn(t, b, "status", "--porcelain"); st != "M app.txt" {
		t.Errorf("b after a's approve: status %q; want its change still uncommitted (M app.txt)", st)
	}
	if msg := gitIn(t, b, "log", "-1", "--format=%s"); msg != "init" {
		t.Errorf("b's last commit: %q; want init", msg)
	}
	reg, _ := e.registry(u)
	pa, _ := reg.Find("a")
	pb, _ := reg.Find("b")
	if pa.Branch != "textslash/approve-a-00" || pb.Branch != "main" {
		t.Errorf("registry branches: a %q, b %q; want textslash/approve-a-00, main", pa.Branch, pb.Branch)
	}
}

// The default project gets a registry entry once it has a branch, and
// the entry follows it; a run that leaves the branch as it was writes
// nothing.
func TestProjectDefaultBranch(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute})
	u := e.user(contract.ChannelWeb, "alice")
	if ev := e.run(contract.Job{ID: "m1", User: u, Text: "echo not yet a repository"}); ev.Status != contract.StatusOK {
		t.Fatalf("m1: %q", ev.Text)
	}
	if reg, rev := e.registry(u); rev != 0 {
		t.Errorf("registry before a branch: %+v; want none", reg)
	}
	e.run(contract.Job{ID: "m2", User: u, Text: "git init -q --initial-branch=trunk"})
	reg, rev := e.registry(u)
	if p, ok := reg.Find(contract.DefaultProject); !ok || p.Branch != "trunk" || p.URL != "" || len(reg.List) != 1 {
		t.Fatalf("registry %+v; want the default project on trunk, no URL", reg)
	}
	e.run(contract.Job{ID: "m3", User: u, Text: "echo same branch"})
	if _, rev3 := e.registry(u); rev3 != rev {
		t.Errorf("a run on the same branch wrote the registry (revision %d → %d)", rev, rev3)
	}
	e.run(contract.Job{ID: "m4", User: u, Text: "git checkout -q -b feature"})
	if reg, _ := e.registry(u); len(reg.List) != 1 || reg.List[0].Branch != "feature" {
		t.Errorf("registry %+v; want the default project on feature", reg)
	}
}

// Run as an unprivileged agent user with umask 077, a clone and the runs
// in its project are the agent user's, however the runner made the
// directories.
func TestProjectAsAgentUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	au := testAgentUser(t)
	e := newRunnerEnv(t)
	for _, d := range []string{filepath.Dir(e.workspaces), e.workspaces} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.workspaces = filepath.Join(e.workspaces, "ws")
	bare := bareRepo(t)
	// The agent user reads the repository: its own, for git's ownership
	// check, through directories it may pass.
	if err := filepath.Walk(bare, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(au.UID), int(au.GID))
	}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(filepath.Dir(bare)), filepath.Dir(bare)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	old := syscall.Umask(0o077) // process-wide: no test of this package runs in parallel
	t.Cleanup(func() { syscall.Umask(old) })
	e.start(Config{Timeout: time.Minute, AgentUser: au.Name})
	u := e.user(contract.ChannelWeb, "alice")
	if ev := e.clone(u, "c1", "file://"+bare, "app"); ev.Status != contract.StatusOK {
		t.Fatalf("clone: %q %q", ev.Status, ev.Text)
	}
	ev := e.run(contract.Job{ID: "m1", User: u, Project: "app", Text: "id -u; stat -c %u app.txt; touch mine && stat -c %u mine && rm mine"})
	if want := fmt.Sprintf("%d\n%d\n%d", au.UID, au.UID, au.UID); ev.Status != contract.StatusOK || ev.Text != want {
		t.Errorf("run in app: got %q %q; want ok %q", ev.Status, ev.Text, want)
	}
}

// In the sandbox, a run in a named project sees its own workspace and
// none of another person's, nor its person's other projects.
func TestProjectSandboxed(t *testing.T) {
	var au *sandbox.User
	if os.Geteuid() == 0 {
		// As root the runs need a user of their own (else nobody).
		au = testAgentUser(t)
	}
	if err := (&sandbox.Sandbox{}).Probe(au); err != nil {
		t.Skip(err)
	}
	e := newRunnerEnv(t)
	bare := bareRepo(t)
	giveRepo(t, bare, au)
	cfg := Config{Timeout: time.Minute, Sandbox: &sandbox.Sandbox{Share: []string{filepath.Dir(bare)}}} // the clone reads the repository in the sandbox
	if au != nil {
		cfg.AgentUser = au.Name
	}
	e.start(cfg)
	alice, bob := e.user(contract.ChannelWeb, "alice"), e.user(contract.ChannelWeb, "bob")
	if ev := e.run(contract.Job{ID: "b1", User: bob, Text: "echo bob-secret > secret.txt && echo ok"}); ev.Text != "ok" {
		t.Fatalf("bob: %q %q", ev.Status, ev.Text)
	}
	if ev := e.run(contract.Job{ID: "a0", User: alice, Text: "echo alice-default > d.txt && echo ok"}); ev.Text != "ok" {
		t.Fatalf("alice's default: %q %q", ev.Status, ev.Text)
	}
	for _, name := range []string{"a", "b"} {
		if ev := e.clone(alice, "clone-"+name, "file://"+bare, name); ev.Status != contract.StatusOK {
			t.Fatalf("clone %s in the sandbox: %q %q", name, ev.Status, ev.Text)
		}
	}
	script := fmt.Sprintf(`pwd; cat app.txt; cat %[1]s/web.bob/secret.txt 2>&1 || echo no-bob; ls %[1]s/web.bob 2>&1 || echo no-bob-dir; test -e %[2]s && echo sees-b || echo no-b; test -e %[1]s/web.alice/d.txt && echo sees-default || echo no-default; exit 0`,
		e.workspaces, e.projectDir(alice, "b"))
	ev := e.run(contract.Job{ID: "a1", User: alice, Project: "a", Text: script})
	t.Logf("run in project a:\n%s", ev.Text)
	if ev.Status != contract.StatusOK || !strings.HasPrefix(ev.Text, e.projectDir(alice, "a")+"\nhello from app\n") {
		t.Errorf("run in project a: got %q %q; want it in a's workspace", ev.Status, ev.Text)
	}
	for _, want := range []string{"no-bob", "no-bob-dir", "no-b", "no-default"} {
		if !strings.Contains(ev.Text, "\n"+want+"\n") && !strings.HasSuffix(ev.Text, "\n"+want) {
			t.Errorf("run in project a: no %q line: it saw what it must not", want)
		}
	}
	if strings.Contains(ev.Text, "bob-secret") {
		t.Errorf("run in project a read bob's file")
	}
}

// giveRepo lets the runs' user au (nil: textslash's) read the bare
// repository bare: its own, for git's ownership check, through
// directories it may pass, besides those of extra.
func giveRepo(t *testing.T, bare string, au *sandbox.User, extra ...string) {
	t.Helper()
	if au == nil {
		return
	}
	if err := filepath.Walk(filepath.Dir(bare), func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(au.UID), int(au.GID))
	}); err != nil {
		t.Fatal(err)
	}
	for _, d := range append([]string{filepath.Dir(filepath.Dir(bare)), filepath.Dir(bare)}, extra...) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
