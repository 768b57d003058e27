// The ACP side of the tests: the real `gemini --acp` as a subprocess, run
// as the agent user under root, and a client recording what it sends.

package geminitest

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// client is the ACP client: it records the agent's updates and permission
// requests and answers the latter with choose.
type client struct {
	t      testing.TB
	choose func(acp.RequestPermissionRequest) acp.RequestPermissionResponse

	mu      sync.Mutex
	updates []acp.SessionUpdate
	perms   []acp.RequestPermissionRequest
}

var _ acp.Client = (*client)(nil)

func (c *client) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.perms = append(c.perms, p)
	c.mu.Unlock()
	if c.choose == nil {
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}}, nil
	}
	return c.choose(p), nil
}

func (c *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	return nil
}

func (c *client) Updates() []acp.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.SessionUpdate(nil), c.updates...)
}

func (c *client) Permissions() []acp.RequestPermissionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.RequestPermissionRequest(nil), c.perms...)
}

var errNoCapability = errors.New("geminitest client: capability not offered")

func (c *client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errNoCapability
}

func (c *client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errNoCapability
}

func (c *client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errNoCapability
}

func (c *client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errNoCapability
}

func (c *client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errNoCapability
}

func (c *client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errNoCapability
}

func (c *client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errNoCapability
}

// agent is one running `gemini --acp`.
type agent struct {
	conn    *acp.ClientSideConnection
	cmd     *exec.Cmd
	home    string
	started time.Time
	stop    func()
}

// ownedDir is a new directory under the system's temporary one, owned by
// the agent user when there is one, removed when the test ends.
func ownedDir(t testing.TB, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if name := AgentUser(t); name != "" {
		uid, gid := lookup(t, name)
		if err := os.Chown(dir, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func lookup(t testing.TB, name string) (uid, gid uint32) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	id, err1 := strconv.ParseUint(u.Uid, 10, 32)
	g, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	return uint32(id), uint32(g)
}

// startAgent starts `gemini --acp` with home as HOME, talking to m, and
// connects c to it. The process is killed when the test ends, or by stop.
func startAgent(t testing.TB, m *Model, home string, c *client) *agent {
	t.Helper()
	WriteSettings(t, home)
	cmd := exec.Command(Binary(t), "--acp")
	cmd.Dir = home
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}, Env(m)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if name := AgentUser(t); name != "" {
		uid, gid := lookup(t, name)
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uid, Gid: gid}
		cmd.Env = append(cmd.Env, "USER="+name, "LOGNAME="+name)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{cmd: cmd, home: home, started: time.Now()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			t.Log("gemini: " + strings.TrimRight(sc.Text(), "\r"))
		}
	}()
	var once sync.Once
	a.stop = func() {
		once.Do(func() {
			stdin.Close()
			// The group of the process started here: gemini and its shells.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-logged
			_ = cmd.Wait()
		})
	}
	t.Cleanup(a.stop)
	a.conn = acp.NewClientSideConnection(c, stdin, stdout)
	return a
}
