// Starting codex-acp as a subprocess and talking ACP to it as a client.

package openaitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// dirs are a test's directories, owned by the user codex-acp runs as.
type dirs struct {
	home, codexHome, work string
}

// newDirs makes HOME, CODEX_HOME (in HOME) and a workspace for u (nil: the
// test's own user), in a directory the test removes when it ends.
func newDirs(t *testing.T, u *user.User) dirs {
	t.Helper()
	root, err := os.MkdirTemp("", "openaitest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	d := dirs{home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	d.codexHome = filepath.Join(d.home, ".codex")
	for _, p := range []string{d.home, d.codexHome, d.work} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if u != nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			if err := os.Chown(p, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
	}
	return d
}

// agent is a running codex-acp and the client side of its connection.
type agent struct {
	cmd     *exec.Cmd
	conn    *acp.ClientSideConnection
	client  *client
	stderr  *syncBuffer
	started time.Time // when the process started
}

// startAgent starts codex-acp with extra -c overrides, talking to m, in d,
// as u when not nil. It is killed when the test ends.
func startAgent(t *testing.T, m *Model, d dirs, u *user.User, extra ...string) *agent {
	t.Helper()
	args := append(Args(m), extra...)
	cmd := exec.Command(Binary(t), args...)
	cmd.Dir = d.work
	cmd.Env = append([]string{
		"HOME=" + d.home, "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
		"RUST_LOG=" + os.Getenv("OPENAITEST_RUST_LOG"),
	}, Env(m, d.codexHome)...)
	if u != nil {
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		cmd.SysProcAttr = &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)},
			Setpgid:    true,
		}
		cmd.Env = append(cmd.Env, "USER="+u.Username, "LOGNAME="+u.Username)
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	a := &agent{cmd: cmd, client: &client{t: t}, stderr: &syncBuffer{}}
	cmd.Stderr = a.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.kill()
		if s := a.stderr.String(); s != "" {
			t.Logf("codex-acp stderr:\n%s", s)
		}
	})
	a.conn = acp.NewClientSideConnection(a.client, stdin, stdout)
	a.conn.SetLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	return a
}

// kill ends codex-acp and its process group (the commands it ran), and
// waits for it.
func (a *agent) kill() {
	if a.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
	_ = a.cmd.Wait()
}

// ctx is a context for one ACP call: cancelled when it hangs too long.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// initialize initializes the connection and logs the agent's answer.
func (a *agent) initialize(t *testing.T) acp.InitializeResponse {
	t.Helper()
	resp, err := a.conn.Initialize(ctx(t), acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{},
	})
	if err != nil {
		t.Fatalf("initialize: %v", describe(err))
	}
	logJSON(t, "initialize", resp)
	return resp
}

// describe is err with a JSON-RPC error's data.
func describe(err error) error {
	var re *acp.RequestError
	if errors.As(err, &re) {
		b, _ := json.Marshal(re)
		return errors.New(string(b))
	}
	return err
}

func logJSON(t *testing.T, what string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	t.Logf("%s: %s", what, b)
}

// client is the ACP client: it records the session's updates and answers
// permission requests with the option of kind choose.
type client struct {
	t      *testing.T
	mu     sync.Mutex
	choose acp.PermissionOptionKind
	asked  []acp.RequestPermissionRequest
	upd    []acp.SessionUpdate
}

func (c *client) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	logJSON(c.t, "session/request_permission", p)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, p)
	for _, o := range p.Options {
		if o.Kind == c.choose {
			return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
				Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}}, nil
		}
	}
	c.t.Errorf("no permission option of kind %q", c.choose)
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{
		Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
}

func (c *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	logJSON(c.t, "session/update", n.Update)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.upd = append(c.upd, n.Update)
	return nil
}

// updates returns the session updates so far.
func (c *client) updates() []acp.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.SessionUpdate(nil), c.upd...)
}

// permissions returns the permission requests so far.
func (c *client) permissions() []acp.RequestPermissionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.RequestPermissionRequest(nil), c.asked...)
}

var errUnsupported = errors.New("openaitest client: not supported")

func (c *client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errUnsupported
}

func (c *client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errUnsupported
}

func (c *client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errUnsupported
}

func (c *client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errUnsupported
}

func (c *client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errUnsupported
}

func (c *client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errUnsupported
}

func (c *client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errUnsupported
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
