package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// People of the credentials tests: A and B have credentials, C none.
var (
	credA = contract.User{Channel: contract.ChannelWhatsApp, ID: "15551234567"} // phone.15551234567
	credB = contract.User{Channel: contract.ChannelTelegram, ID: "123456789"}
	credC = contract.User{Channel: contract.ChannelWeb, ID: "c0ffee"}
)

// credTest is a runner's sandbox and credentials as New readies them,
// for runs made the way handle makes them.
type credTest struct {
	box   *Sandbox
	user  *User
	ws    string // workspaces
	dir   string // the operator's credentials
	creds *Credentials
	log   *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newCredTest readies a sandbox (as the agent user nobody when the test
// runs as root, as textslash does) and a credentials directory of root's
// 0600 files, written by write. Nothing is under /tmp, which the sandbox
// hides anyway: /var/tmp shows what hiding the directories does.
func newCredTest(t *testing.T, sandboxed bool, write func(dir string)) *credTest {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "textslash-credentials-")
	if err != nil {
		t.Logf("no /var/tmp (%v): under /tmp, hidden from runs whatever the credentials do", err)
		base = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(base) })
	}
	ct := &credTest{ws: filepath.Join(base, "workspaces"), dir: filepath.Join(base, "credentials"), log: &lockedBuffer{}}
	if err := os.Mkdir(ct.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ct.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write(ct.dir)
	log := zerolog.New(ct.log)
	// As the runner readies them at start: as root, runs drop to nobody.
	if os.Geteuid() == 0 && sandboxed {
		if ct.user, err = LookupUser("nobody"); err != nil {
			t.Skip(err)
		}
	}
	if _, err := Reachable(ct.ws, ct.user); err != nil {
		t.Fatal(err)
	}
	if sandboxed {
		ct.box = &Sandbox{}
		if _, err := ct.box.Ready(ct.user, ct.ws, "", log); errors.Is(err, ErrNoSandbox) {
			t.Skip(err)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if ct.creds, err = OpenCredentials(ct.dir, ct.ws, ct.box, ct.user, log); err != nil {
		t.Fatal(err)
	}
	return ct
}

// writeSecret writes a file of the operator's: root's (the test's user's)
// and 0600.
func writeSecret(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// loosen makes path and everything under it readable by all.
func loosen(t *testing.T, path string) {
	t.Helper()
	err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sshKey makes a private key at path and returns a line of it (to look
// for where it must not be); "" when ssh-keygen is missing.
func sshKey(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", path).CombinedOutput(); err != nil {
		t.Logf("no ssh key (%v: %s): ssh's part not tested", err, out)
		return ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(data), "\n")[2] // within the base64, past the common header
}

// command is the command function of a run of u, as handle makes it, and
// its credentials (removed at the test's end at the latest).
func (ct *credTest) command(t *testing.T, u contract.User, extra ...string) (func(name string, args ...string) *exec.Cmd, *RunCredentials, string) {
	t.Helper()
	dir := filepath.Join(ct.ws, u.Key())
	home := filepath.Join(ct.ws, ".home", u.Key())
	if err := PrepareWorkspace(dir, home, ct.user); err != nil {
		t.Fatal(err)
	}
	rc, err := ct.creds.Issue(u, home, zerolog.New(ct.log))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Remove)
	command := CommandFunc(dir, home, ct.user, false, rc.Env(extra)...)
	if ct.box != nil {
		command = Confined(command, rc.Sandbox(ct.box), dir, home, "", nil)
	}
	return func(name string, args ...string) *exec.Cmd { return command(t.Context(), name, args...) }, rc, home
}

// run runs script in a run of u and returns its output; the run's
// credentials are removed, as when handle returns.
func (ct *credTest) run(t *testing.T, u contract.User, script string, extra ...string) string {
	t.Helper()
	command, rc, _ := ct.command(t, u, extra...)
	cmd := command("/bin/sh", "-c", script)
	out, err := cmd.CombinedOutput()
	EndGroup(cmd)
	rc.Remove()
	if err != nil {
		t.Logf("%s's run: %v", u.Key(), err)
	}
	return string(out)
}

// A run of A sees A's credentials at CredentialsPath, and git uses them;
// a run of B, while A's goes on, sees B's own and nothing of A's: not at
// CredentialsPath, not in the operator's directory, not in A's copy, not
// through /proc. A run of C, who has none, sees none. Each copy is gone
// when its run ends, and no secret is in the log.
func TestCredentialsOnlyInTheirPersonsRuns(t *testing.T) {
	var keyLine string
	ct := newCredTest(t, true, func(dir string) {
		writeSecret(t, filepath.Join(dir, contract.PersonKey(credA), "git-credentials"), "http://alice:token-of-a@127.0.0.1:9\n")
		keyLine = sshKey(t, filepath.Join(dir, contract.PersonKey(credA), "ssh", "id_ed25519"))
		writeSecret(t, filepath.Join(dir, contract.PersonKey(credA), "ssh", "known_hosts"), "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
		writeSecret(t, filepath.Join(dir, contract.PersonKey(credB), "git-credentials"), "http://bob:token-of-b@127.0.0.1:9\n")
		// A's are open to anyone on the machine (an operator's slip): only
		// the sandbox keeps them from B's run. B's are root's, 0600: B's
		// run reads its copy all the same.
		loosen(t, dir)
		loosen(t, filepath.Join(dir, contract.PersonKey(credA)))
	})
	if logs := ct.log.String(); !strings.Contains(logs, "chmod 700") {
		t.Errorf("no warning of the open credentials directory:\n%s", logs)
	}
	p := CredentialsPath
	fill := `printf 'protocol=http\nhost=127.0.0.1:9\n\n' | GIT_TERMINAL_PROMPT=0 git credential fill 2>&1`

	// A's run: its credentials, and git and ssh pointed at them. It waits
	// (read) while B's and C's runs look for them.
	command, rcA, _ := ct.command(t, credA)
	a := command("/bin/sh", "-c", strings.Join([]string{
		"cat " + p + "/git-credentials",
		"echo helper=$(git config --get credential.helper)",
		fill,
		"stat -c 'owner=%u mode=%a' " + p + "/git-credentials",
		"ssh-keygen -y -f " + p + "/ssh/id_ed25519 >/dev/null && echo key-usable",
		`eval "$GIT_SSH_COMMAND -G git.example.com" 2>&1 | grep -E '^(identityfile|stricthostkeychecking|userknownhostsfile|batchmode|identitiesonly) '`,
		"echo ready", "read x || true",
	}, "\n"))
	stdin, err := a.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := a.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.Stderr = a.Stdout
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	var aOut strings.Builder
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && lines.Text() != "ready" {
		aOut.WriteString(lines.Text() + "\n")
	}
	got := aOut.String()
	uid := os.Getuid()
	if ct.user != nil {
		uid = int(ct.user.UID)
	}
	wantA := []string{
		"http://alice:token-of-a@127.0.0.1:9", // the file, at CredentialsPath
		"helper=!f() { test \"$1\" != get || exec git credential-store --file='" + p + "/git-credentials' get; }; f",
		"password=token-of-a", // git asks the helper, which reads it
		fmt.Sprintf("owner=%d mode=600", uid),
	}
	if keyLine != "" {
		wantA = append(wantA, "key-usable", // ssh takes the copy: the run's user's, 0600
			"identityfile "+p+"/ssh/id_ed25519", "identitiesonly yes", "batchmode yes",
			"stricthostkeychecking true", "userknownhostsfile "+p+"/ssh/known_hosts")
	}
	for _, w := range wantA {
		if !strings.Contains(got, w) {
			t.Errorf("A's run lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "token-of-b") {
		t.Errorf("A's run saw B's token:\n%s", got)
	}

	// B's run, while A's copy is there and bound in A's run.
	copyA := rcA.dir
	if _, err := os.Stat(filepath.Join(copyA, "git-credentials")); err != nil {
		t.Fatalf("A's copy, while A's run goes on: %v", err)
	}
	look := strings.Join([]string{
		"cat " + p + "/git-credentials 2>&1", "ls -la " + p + "/ssh 2>&1",
		fill,
		"echo ssh=$GIT_SSH_COMMAND",
		"ls -laR " + ct.dir + " 2>&1", "cat " + ct.dir + "/*/git-credentials 2>&1",
		"ls -laR " + filepath.Join(ct.ws, credentialsCopies) + " 2>&1",
		"cat " + copyA + "/git-credentials " + copyA + "/ssh/id_ed25519 2>&1",
		"grep -rs 'token-of-[a]' /tmp /var/tmp /proc/*/environ /proc/*/cmdline 2>&1", // [a]: not the grep's own command line
		"cat /proc/*/mountinfo 2>&1 | sed 's/^/mountinfo: /'", "ls -la /proc/*/root/tmp/textslash/credentials/ 2>&1",
		"true",
	}, "\n")
	mustNot := []string{"token-of-a"}
	if keyLine != "" {
		mustNot = append(mustNot, keyLine)
	}
	// Mounts name their source: A's copy is in none of the run's.
	mounted := func(out string) bool {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "mountinfo: ") && strings.Contains(l, filepath.Base(copyA)) {
				return true
			}
		}
		return false
	}
	gotB := ct.run(t, credB, look)
	for _, m := range mustNot {
		if strings.Contains(gotB, m) {
			t.Errorf("B's run saw %q:\n%s", m, gotB)
		}
	}
	if mounted(gotB) {
		t.Errorf("A's copy is mounted in B's run:\n%s", gotB)
	}
	for _, w := range []string{"http://bob:token-of-b@127.0.0.1:9", "password=token-of-b", "ssh=\n"} {
		if !strings.Contains(gotB, w) {
			t.Errorf("B's run lacks its own %q:\n%s", w, gotB)
		}
	}
	gotC := ct.run(t, credC, look+"\necho helper=$(git config --get credential.helper)")
	for _, m := range append(mustNot, "token-of-b", "password=") {
		if strings.Contains(gotC, m) {
			t.Errorf("C's run saw %q:\n%s", m, gotC)
		}
	}
	if mounted(gotC) {
		t.Errorf("A's copy is mounted in C's run:\n%s", gotC)
	}
	if !strings.Contains(gotC, "helper=\n") || !strings.Contains(gotC, p+"/git-credentials: No such file") {
		t.Errorf("C's run: want no helper and nothing at %s:\n%s", p, gotC)
	}

	stdin.Close()
	if err := a.Wait(); err != nil {
		t.Errorf("A's run: %v", err)
	}
	EndGroup(a)
	rcA.Remove()
	// The secrets are gone; the person's directory stays, empty, for their
	// home's bind.
	if left, err := os.ReadDir(copyA); err != nil || len(left) > 0 {
		t.Errorf("A's copy after the run: %v %v; want it empty", left, err)
	}
	_ = filepath.WalkDir(filepath.Join(ct.ws, credentialsCopies), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("a copy left after the runs: %s", path)
		}
		return nil
	})
	logs := ct.log.String()
	for _, m := range []string{"token-of-a", "token-of-b", "alice"} {
		if strings.Contains(logs, m) || (keyLine != "" && strings.Contains(logs, keyLine)) {
			t.Errorf("the log holds a secret (%q):\n%s", m, logs)
		}
	}
	if !strings.Contains(logs, `"person":"phone.15551234567"`) || !strings.Contains(logs, `"kinds":["https"`) {
		t.Errorf("the log does not say whose credentials and which kinds:\n%s", logs)
	}
}

// An https clone from a server demanding basic auth (git http-backend
// behind a password check): A's run clones with A's token; B's (a wrong
// token) and C's (none) do not. git asks nothing it cannot answer, and
// says nothing about the read-only copy.
func TestCredentialsCloneOverHTTP(t *testing.T) {
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skip("no git")
	}
	backend := filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skip("no git-http-backend")
	}
	srv := t.TempDir()
	src := filepath.Join(srv, "src")
	for _, args := range [][]string{
		{"init", "-q", src},
		{"-C", src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "hello from the private repository"},
		{"clone", "-q", "--bare", src, filepath.Join(srv, "repo.git")},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	cgiHandler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + srv, "GIT_HTTP_EXPORT_ALL=1"}}
	var served atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "alice" || pass != "token-of-a" {
			w.Header().Set("WWW-Authenticate", `Basic realm="private"`)
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		served.Add(1)
		cgiHandler.ServeHTTP(w, r)
	}))
	defer ts.Close()
	host := strings.TrimPrefix(ts.URL, "http://")
	ct := newCredTest(t, true, func(dir string) {
		writeSecret(t, filepath.Join(dir, contract.PersonKey(credA), "git-credentials"), "http://alice:token-of-a@"+host+"\n")
		writeSecret(t, filepath.Join(dir, contract.PersonKey(credB), "git-credentials"), "http://bob:token-of-b@"+host+"\n")
	})
	clone := "git clone -q " + ts.URL + "/repo.git private 2>&1 && git -C private log --format=%s"
	if got := ct.run(t, credA, clone, "GIT_TERMINAL_PROMPT=0"); !strings.Contains(got, "hello from the private repository") || strings.Contains(got, "fatal") {
		t.Errorf("A's clone: %s; want the repository, and no complaint", got)
	}
	if served.Load() == 0 {
		t.Error("the server served nobody")
	}
	before := served.Load()
	for _, u := range []contract.User{credB, credC} {
		if got := ct.run(t, u, clone, "GIT_TERMINAL_PROMPT=0"); strings.Contains(got, "hello from") || !strings.Contains(got, "fatal") {
			t.Errorf("%s's clone: %s; want it refused", u.Key(), got)
		}
	}
	if served.Load() != before {
		t.Error("the server served B or C")
	}
}

// An ssh key without known_hosts: a host is trusted when first met and
// remembered in the person's home, whose .ssh the runner makes — and
// never follows, when the person's agent left a link there.
func TestCredentialsSSHWithoutKnownHosts(t *testing.T) {
	var keyLine string
	ct := newCredTest(t, true, func(dir string) {
		keyLine = sshKey(t, filepath.Join(dir, contract.PersonKey(credA), "ssh", "id_ed25519"))
	})
	if keyLine == "" {
		t.Skip("no ssh-keygen")
	}
	home := filepath.Join(ct.ws, ".home", credA.Key())
	got := ct.run(t, credA, `eval "$GIT_SSH_COMMAND -G git.example.com" | grep -E '^(stricthostkeychecking|userknownhostsfile) '; test -w "$HOME/.ssh" && echo ssh-dir-writable`)
	for _, w := range []string{"stricthostkeychecking accept-new", "userknownhostsfile " + home + "/.ssh/known_hosts", "ssh-dir-writable"} {
		if !strings.Contains(got, w) {
			t.Errorf("run lacks %q:\n%s", w, got)
		}
	}

	// The person's agent made .ssh a link to somewhere of root's.
	victim := filepath.Join(filepath.Dir(ct.ws), "victim")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(home, ".ssh")); err != nil {
		t.Fatal(err)
	}
	ct.run(t, credA, "true")
	fi, err := os.Stat(victim)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() || fi.Mode().Perm() != 0o700 {
		t.Errorf("the link's target became uid %d mode %v; want it untouched", st.Uid, fi.Mode().Perm())
	}
}

// Without the sandbox nothing would keep one person's credentials from
// another's agent: none are handed out, and the operator is told once.
func TestCredentialsNeedTheSandbox(t *testing.T) {
	ct := newCredTest(t, false, func(dir string) {
		writeSecret(t, filepath.Join(dir, contract.PersonKey(credA), "git-credentials"), "http://alice:token-of-a@127.0.0.1:9\n")
	})
	if ct.creds != nil {
		t.Fatal("credentials handed out without a sandbox")
	}
	logs := ct.log.String()
	if !strings.Contains(logs, `"level":"error"`) || !strings.Contains(logs, "TEXTSLASH_SANDBOX=off") || strings.Count(logs, "\n") != 1 {
		t.Errorf("log %q; want one error naming TEXTSLASH_SANDBOX=off", logs)
	}
	got := ct.run(t, credA, "env | grep ^GIT_; git config --get credential.helper; ls "+CredentialsPath+" 2>&1; true")
	if strings.Contains(got, "GIT_") || strings.Contains(got, "credential-store") {
		t.Errorf("unsandboxed run was pointed at credentials:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(ct.ws, credentialsCopies)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("copies directory made without a sandbox: %v", err)
	}
}

// A directory shared with every run would show the credentials again
// (shared directories are bound after hidden ones are hidden): refused at
// start.
func TestCredentialsNotShared(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "etc", "credentials")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, share := range []string{filepath.Join(base, "etc"), dir, filepath.Join(dir, "phone.1"), filepath.Join(base, "workspaces")} {
		box := &Sandbox{Share: []string{share}}
		if _, err := OpenCredentials(dir, filepath.Join(base, "workspaces"), box, nil, zerolog.Nop()); err == nil {
			t.Errorf("credentials %s with %s shared: no error", dir, share)
		}
	}
	box := &Sandbox{Share: []string{filepath.Join(base, "cache"), filepath.Join(base, "etc", "credentials-not")}}
	if err := os.Mkdir(filepath.Join(base, "workspaces"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCredentials(dir, filepath.Join(base, "workspaces"), box, nil, zerolog.Nop()); err != nil {
		t.Errorf("credentials beside the shared directories: %v", err)
	}
}

// The run's git configuration entries follow those its environment has
// already, and git reads both.
func TestGitConfigEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"none before", []string{"A=1"}, []string{"A=1", "GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=h", "GIT_CONFIG_COUNT=1"}},
		{"one before", []string{"GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Ann", "GIT_CONFIG_COUNT=1"},
			[]string{"GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Ann", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_1=credential.helper", "GIT_CONFIG_VALUE_1=h", "GIT_CONFIG_COUNT=2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gitConfigEnv(slices.Clone(tc.env), "credential.helper", "h"); !slices.Equal(got, tc.want) {
				t.Errorf("got %q; want %q", got, tc.want)
			}
		})
	}
	env := gitConfigEnv([]string{"GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_VALUE_0=Ann", "GIT_CONFIG_COUNT=1"}, "credential.helper", "h")
	for key, want := range map[string]string{"user.name": "Ann", "credential.helper": "h"} {
		cmd := exec.Command("git", "config", "--get", key)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("git config --get %s = %q, %v; want %q", key, out, err, want)
		}
	}
}

// A clone over ssh from a local sshd that knows one key: a run with that
// key and the server's host key in known_hosts clones; one whose
// known_hosts names another key for the host is refused (the hosts given
// are the only ones trusted); one without known_hosts trusts the host on
// first use and remembers it in the person's home; a run without a key
// does not clone.
func TestCredentialsCloneOverSSH(t *testing.T) {
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skip("no sshd (apt install openssh-server)")
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	srv := t.TempDir()
	keygen := func(path string) string {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", path).CombinedOutput(); err != nil {
			t.Skipf("ssh-keygen: %v: %s", err, out)
		}
		pub, err := os.ReadFile(path + ".pub")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(pub))
	}
	hostPub := keygen(filepath.Join(srv, "host_key"))
	otherHostPub := keygen(filepath.Join(srv, "other_host_key"))
	clientPub := keygen(filepath.Join(srv, "client_key"))
	if err := os.WriteFile(filepath.Join(srv, "authorized_keys"), []byte(clientPub+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(srv, "repo.git")
	src := filepath.Join(srv, "src")
	for _, args := range [][]string{
		{"init", "-q", src},
		{"-C", src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "hello over ssh"},
		{"clone", "-q", "--bare", src, repo},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	config := filepath.Join(srv, "sshd_config")
	if err := os.WriteFile(config, []byte(strings.Join([]string{
		fmt.Sprintf("Port %d", port), "ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(srv, "host_key"),
		"AuthorizedKeysFile " + filepath.Join(srv, "authorized_keys"),
		"PidFile none", "UsePAM no", "StrictModes no",
		"PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
	}, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		_ = os.MkdirAll("/run/sshd", 0o755) // its privilege separation directory
	}
	var sshdLog lockedBuffer
	sshd := exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", config)
	sshd.Stdout, sshd.Stderr = &sshdLog, &sshdLog
	if err := sshd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sshd.Process.Kill()
		_ = sshd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd does not listen: %v\n%s", err, sshdLog.String())
		}
		time.Sleep(20 * time.Millisecond)
	}

	knownHosts := func(pub string) string {
		f := strings.Fields(pub)
		return fmt.Sprintf("[127.0.0.1]:%d %s %s\n", port, f[0], f[1])
	}
	clientKey, err := os.ReadFile(filepath.Join(srv, "client_key"))
	if err != nil {
		t.Fatal(err)
	}
	strict := contract.User{Channel: contract.ChannelWeb, ID: "strict"}
	wrongHost := contract.User{Channel: contract.ChannelWeb, ID: "wronghost"}
	firstUse := contract.User{Channel: contract.ChannelWeb, ID: "firstuse"}
	ct := newCredTest(t, true, func(dir string) {
		for u, kh := range map[contract.User]string{strict: knownHosts(hostPub), wrongHost: knownHosts(otherHostPub), firstUse: ""} {
			writeSecret(t, filepath.Join(dir, contract.PersonKey(u), "ssh", "id_ed25519"), string(clientKey))
			if kh != "" {
				writeSecret(t, filepath.Join(dir, contract.PersonKey(u), "ssh", "known_hosts"), kh)
			}
		}
	})
	clone := fmt.Sprintf("git clone -q ssh://%s@127.0.0.1:%d%s private 2>&1 && git -C private log --format=%%s", me.Username, port, repo)
	if got := ct.run(t, strict, clone); !strings.Contains(got, "hello over ssh") {
		t.Errorf("clone with the key and the host's key: %s\nsshd: %s", got, sshdLog.String())
	}
	if got := ct.run(t, wrongHost, clone); strings.Contains(got, "hello over ssh") || !strings.Contains(got, "Host key verification failed") {
		t.Errorf("clone with another key for the host: %s; want it refused", got)
	}
	if got := ct.run(t, credC, clone, "GIT_SSH_COMMAND=ssh -o BatchMode=yes -o StrictHostKeyChecking=no"); strings.Contains(got, "hello over ssh") {
		t.Errorf("clone without a key: %s; want it refused", got)
	}
	if got := ct.run(t, firstUse, clone); !strings.Contains(got, "hello over ssh") {
		t.Errorf("clone without known_hosts: %s; want the host trusted on first use", got)
	}
	remembered, err := os.ReadFile(filepath.Join(ct.ws, ".home", firstUse.Key(), ".ssh", "known_hosts"))
	if want := strings.Fields(hostPub)[1]; err != nil || !strings.Contains(string(remembered), want) {
		t.Errorf("the person's known_hosts: %q, %v; want the host's key remembered", remembered, err)
	}
}
