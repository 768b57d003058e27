package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// binary is textslash built once for every test of this package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "textslash-bin")
	if err != nil {
		panic(err)
	}
	// A test may run it as another user (startServeAs).
	if err := os.Chmod(dir, 0o755); err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "textslash")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build textslash: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// instance is a running `textslash serve`.
type instance struct {
	URL     string // http://127.0.0.1:PORT
	NATSURL string // nats://127.0.0.1:PORT
	Data    string
	Log     string // path of its log (JSON lines)
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	env     []string
	argv    []string   // the program and its arguments; textslash serve when empty
	user    *user.User // the OS user it runs as; nil: this test's
}

// startServe starts `textslash serve` with fresh data and free ports, and
// waits until it is ready. env entries (NAME=value) override the defaults.
func startServe(t testing.TB, env ...string) *instance {
	t.Helper()
	return startProgram(t, nil, env...)
}

// startServeAs is startServe run as the OS user name, which owns its data
// directory and its HOME (the data directory): textslash as a normal user.
func startServeAs(t testing.TB, name string, env ...string) *instance {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Skip(err)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run textslash as another user")
	}
	return startProgramAs(t, nil, u, func(string) []string { return env })
}

// startServeOn is startServe for settings that name the web port
// (PUBLIC_URL, say): env is given the port, as a string, on each try.
func startServeOn(t testing.TB, env func(port string) []string) *instance {
	t.Helper()
	return startProgramOn(t, nil, env)
}

// startProgram is startServe for any of textslash's programs: argv is the
// program and its arguments (nil: textslash serve).
func startProgram(t testing.TB, argv []string, env ...string) *instance {
	t.Helper()
	return startProgramOn(t, argv, func(string) []string { return env })
}

// startProgramOn is startProgram with env given the web port, as
// startServeOn.
func startProgramOn(t testing.TB, argv []string, env func(port string) []string) *instance {
	t.Helper()
	return startProgramAs(t, argv, nil, env)
}

// startProgramAs is startProgramOn as the OS user u (nil: this test's).
func startProgramAs(t testing.TB, argv []string, u *user.User, env func(port string) []string) *instance {
	t.Helper()
	// Another process may take a port between freePort's check and the
	// program's listen: the first start then fails, and it is tried again
	// with fresh data on other ports. (A port the caller chose in env
	// stays as given.)
	for try := 1; ; try++ {
		port := freePort(t)
		data := t.TempDir()
		// t.TempDir and its parent are 0700: agent users must reach their workspaces.
		for _, d := range []string{filepath.Dir(data), data} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if u != nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			if err := os.Chown(data, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		inst := &instance{
			Data: data,
			argv: argv,
			user: u,
			env: append([]string{
				"TEXTSLASH_DATA=" + data,
				"PORT=" + port,
				"TEXTSLASH_NATS_LISTEN=127.0.0.1:" + freePort(t),
				// textslash's preview port is fixed (3002): instances
				// running at once each take a free one.
				"TEXTSLASH_PREVIEW_ADDR=127.0.0.1:0",
				"TEXTSLASH_LOG_FORMAT=json",
				"TEXTSLASH_LOG_LEVEL=debug",
				// A test's last runs need not finish when it stops the
				// process (runner's TestRunnerShutdownLetsRunFinish tests
				// the grace).
				"TEXTSLASH_STOP_GRACE=0s",
				// A process killed leaves people's disks mounted under
				// data, which t.TempDir cannot remove: disks are tested in
				// runner/disk and runner (TestDiskQuotaBoundsAPerson).
				"TEXTSLASH_DISK_QUOTA=0",
			}, env(port)...),
		}
		err := inst.launch(t)
		if err == nil {
			return inst
		}
		if try == 3 || !errors.Is(err, errPortTaken) {
			t.Fatal(err)
		}
		t.Logf("start again on other ports: %v", err)
	}
}

// errPortTaken: a port the program was given had been taken meanwhile.
var errPortTaken = errors.New("port taken")

// start starts the program again, on the ports and data it had.
func (inst *instance) start(t testing.TB) {
	t.Helper()
	if err := inst.launch(t); err != nil {
		t.Fatal(err)
	}
}

// launch starts the program and waits until it is ready; an error says
// why it is not (errPortTaken when a port of its was in use).
func (inst *instance) launch(t testing.TB) error {
	t.Helper()
	// TEXTSLASH_TEST_LOGS keeps every instance's log for reading after the test.
	logDir := os.Getenv("TEXTSLASH_TEST_LOGS")
	if logDir == "" {
		logDir = t.TempDir()
	}
	inst.Log = filepath.Join(logDir, fmt.Sprintf("textslash-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(inst.Log)
	if err != nil {
		t.Fatal(err)
	}
	argv := inst.argv
	if len(argv) == 0 {
		argv = []string{binary, "serve"}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), inst.env...)
	if inst.user != nil {
		uid, _ := strconv.Atoi(inst.user.Uid)
		gid, _ := strconv.Atoi(inst.user.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		cmd.Env = append(cmd.Env, "HOME="+inst.Data, "USER="+inst.user.Username, "LOGNAME="+inst.user.Username)
		cmd.Dir = inst.Data
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inst.cmd = cmd
	exited := make(chan struct{})
	inst.exited = exited
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	logPath := inst.Log // a restart gives inst another log
	t.Cleanup(func() {
		inst.stop()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", filepath.Base(argv[0]), tail(string(out), 6000))
		}
	})
	inst.URL = "http://127.0.0.1:" + envValue(inst.env, "PORT")
	inst.NATSURL = envValue(inst.env, "NATS_URL")
	if inst.NATSURL == "" {
		inst.NATSURL = "nats://" + envValue(inst.env, "TEXTSLASH_NATS_LISTEN")
	}
	err = inst.waitReady()
	if err != nil {
		inst.kill()
	}
	return err
}

// waitReady waits until the program answers /readyz, for 30 s; it fails
// early when the program exits or logs that a port of its is in use.
func (inst *instance) waitReady() error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(inst.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		out, _ := os.ReadFile(inst.Log)
		if i := bytes.Index(out, []byte("address already in use")); i >= 0 {
			line := out[bytes.LastIndexByte(out[:i], '\n')+1:]
			line, _, _ = bytes.Cut(line, []byte("\n"))
			return fmt.Errorf("textslash serve not ready: %w: %s", errPortTaken, line)
		}
		select {
		case <-inst.exited:
			out, _ := os.ReadFile(inst.Log)
			return fmt.Errorf("textslash serve exited before ready:\n%s", out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("textslash serve not ready in 30s")
		}
	}
}

// stop ends the process with SIGTERM, as an operator would.
func (inst *instance) stop() { inst.signal(syscall.SIGTERM) }

// kill ends the process with SIGKILL, as a crash would.
func (inst *instance) kill() { inst.signal(syscall.SIGKILL) }

func (inst *instance) signal(sig syscall.Signal) {
	if inst.cmd == nil || inst.cmd.Process == nil {
		return
	}
	select {
	case <-inst.exited:
		return
	default:
	}
	_ = inst.cmd.Process.Signal(sig)
	select {
	case <-inst.exited:
	case <-time.After(15 * time.Second):
		_ = inst.cmd.Process.Kill()
		<-inst.exited
	}
}

// adminURL is the instance's NATS URL with admin's login: the one textslash
// serve wrote for the nats CLI, or NATS_USER's when it uses NATS_URL.
func (inst *instance) adminURL(t testing.TB) string {
	t.Helper()
	u, err := url.Parse(inst.NATSURL)
	if err != nil {
		t.Fatal(err)
	}
	if envValue(inst.env, "NATS_URL") != "" {
		if user := envValue(inst.env, "NATS_USER"); user != "" {
			u.User = url.UserPassword(user, envValue(inst.env, "NATS_PASSWORD"))
		}
		return u.String()
	}
	login := natsLogin(t, inst.Data, "admin")
	u.User = url.UserPassword(login["NATS_USER"], login["NATS_PASSWORD"])
	return u.String()
}

// natsLogin is a login textslash serve writes for the nats CLI: the
// NATS_URL, NATS_USER and NATS_PASSWORD lines of <data>/nats/<user>.env.
func natsLogin(t testing.TB, data, user string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(data, "nats", user+".env"))
	if err != nil {
		t.Fatalf("the login for %s: %v", user, err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			env[k] = v
		}
	}
	for _, k := range []string{"NATS_URL", "NATS_USER", "NATS_PASSWORD"} {
		if env[k] == "" {
			t.Fatalf("%s.env has no %s: %v", user, k, env)
		}
	}
	return env
}

// freePort finds a free port below the kernel's ephemeral range, so that no
// outgoing connection takes it while a test restarts the process using it.
// The port is free when checked, not held: a program given it may find it
// taken, and startProgram then starts again on others.
func freePort(t testing.TB) string {
	t.Helper()
	for range 100 {
		port := 20000 + rand.IntN(10000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return fmt.Sprint(port)
		}
	}
	t.Fatal("no free port")
	return ""
}

func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// chat is one web chat session, as a browser has it.
type chat struct {
	t      testing.TB
	inst   *instance
	client *http.Client
	User   contract.User
}

// newChat opens the page, which gives the session its cookie: with the
// web chat's token when textslash made one (it is reachable from
// elsewhere: a provider, PUBLIC_URL).
func (inst *instance) newChat(t testing.TB) *chat {
	t.Helper()
	if token, err := os.ReadFile(filepath.Join(inst.Data, "web", "token")); err == nil {
		return inst.openChat(t, "/?token="+strings.TrimSpace(string(token)))
	}
	return inst.openChat(t, "/")
}

// openChat opens the page at path (which may carry ?token=).
func (inst *instance) openChat(t testing.TB, path string) *chat {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &chat{t: t, inst: inst, client: &http.Client{Jar: jar}}
	resp, err := c.client.Get(inst.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %s", resp.Status)
	}
	u, _ := url.Parse(inst.URL)
	for _, ck := range jar.Cookies(u) {
		if ck.Name == contract.WebSessionCookie {
			// The session's user id, before the server's signature.
			id, _, _ := strings.Cut(ck.Value, ".")
			c.User = contract.User{Channel: contract.ChannelWeb, ID: id}
		}
	}
	if c.User.ID == "" {
		t.Fatal("GET / set no session cookie")
	}
	return c
}

// send posts a message and returns its id.
func (c *chat) send(text string) string {
	c.t.Helper()
	body, _ := json.Marshal(map[string]string{"text": text})
	resp, err := c.client.Post(c.inst.URL+"/api/messages", "application/json", bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ ID, Error string }
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("POST /api/messages: %s %s", resp.Status, out.Error)
	}
	return out.ID
}

// sseEvent is one Server-Sent Event of /api/events.
type sseEvent struct {
	ID, Kind string
	Event    contract.Event
	Raw      string
}

// events opens the session's event stream; it closes when ctx ends.
func (c *chat) events(ctx context.Context) <-chan sseEvent {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.inst.URL+"/api/events", nil)
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET /api/events: %s", resp.Status)
	}
	ch := make(chan sseEvent, 100)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		readSSE(resp.Body, ch)
	}()
	return ch
}

func readSSE(r io.Reader, ch chan<- sseEvent) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Raw != "" {
				_ = json.Unmarshal([]byte(ev.Raw), &ev.Event)
				ch <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.Kind = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.Raw = line[6:]
		}
	}
}

// waitFor reads events until one matches, failing after the timeout.
func waitFor(t testing.TB, ch <-chan sseEvent, timeout time.Duration, match func(sseEvent) bool) sseEvent {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("event stream closed")
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no matching event in %v", timeout)
		}
	}
}

// sharedDir is a directory the test and its agents' sandboxes share
// (TEXTSLASH_SANDBOX_SHARE): the sandbox's /tmp is its own.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil { // agents run as another user
		t.Fatal(err)
	}
	return dir
}

// stateIdle returns nil once u's state in the users bucket is idle. The
// dispatcher takes a done event just after the person sees it, so callers
// wait for this with natstest.CheckFor rather than read it once.
func stateIdle(ctx context.Context, js jetstream.JetStream, u contract.User) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, contract.BucketUsers)
	if err != nil {
		return err
	}
	e, err := kv.Get(ctx, u.Key())
	if err != nil {
		return err
	}
	var st contract.UserState
	if err := contract.Decode(e.Value(), &st); err != nil {
		return err
	}
	if st.State != contract.StateIdle {
		return fmt.Errorf("%s left %s (job %s)", u, st.State, st.JobID)
	}
	return nil
}
