package opencodetest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"
	"github.com/textslash/textslash/runner/claudetest"
)

// turnTimeout bounds one ACP call so a hung opencode can't hang the suite.
const turnTimeout = 90 * time.Second

// client is the test's ACP client: it records every session/update and
// permission request, and answers permission requests with choose.
type client struct {
	t      testing.TB
	choose func(acp.RequestPermissionRequest) acp.RequestPermissionOutcome

	mu      sync.Mutex
	updates []acp.SessionUpdate
	kinds   []string // sessionUpdate of each update, in order
	perms   []acp.RequestPermissionRequest
}

var _ acp.Client = (*client)(nil)

func (c *client) RequestPermission(_ context.Context, p acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	b, _ := json.Marshal(p)
	c.t.Logf("session/request_permission: %s", b)
	c.mu.Lock()
	c.perms = append(c.perms, p)
	c.mu.Unlock()
	return acp.RequestPermissionResponse{Outcome: c.choose(p)}, nil
}

func (c *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	b, _ := json.Marshal(n.Update)
	var disc struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	_ = json.Unmarshal(b, &disc)
	c.t.Logf("session/update: %s", b)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n.Update)
	c.kinds = append(c.kinds, disc.SessionUpdate)
	return nil
}

// messageText is the text of every agent_message_chunk, joined.
func (c *client) messageText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sb strings.Builder
	for _, u := range c.updates {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			sb.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return sb.String()
}

func (c *client) permissions() []acp.RequestPermissionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.RequestPermissionRequest(nil), c.perms...)
}

func (c *client) updateKinds() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.kinds...)
}

// The client offers no file system or terminal: opencode runs its tools itself.
func (c *client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound("fs/read_text_file")
}
func (c *client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound("fs/write_text_file")
}
func (c *client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound("terminal/create")
}
func (c *client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound("terminal/kill")
}
func (c *client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound("terminal/output")
}
func (c *client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound("terminal/release")
}
func (c *client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound("terminal/wait_for_exit")
}

// selectKind chooses the first option of kind k.
func selectKind(k acp.PermissionOptionKind) func(acp.RequestPermissionRequest) acp.RequestPermissionOutcome {
	return func(p acp.RequestPermissionRequest) acp.RequestPermissionOutcome {
		for _, o := range p.Options {
			if o.Kind == k {
				return acp.RequestPermissionOutcome{Selected: &acp.RequestPermissionOutcomeSelected{OptionId: o.OptionId}}
			}
		}
		return acp.RequestPermissionOutcome{Cancelled: &acp.RequestPermissionOutcomeCancelled{}}
	}
}

// dirs are a test's HOME and workspace, owned by the user opencode runs as.
type dirs struct {
	home, ws string
	cred     *syscall.Credential // nil when the test is not root
}

// newDirs makes a HOME and a workspace; as root, both belong to
// claudetest.AgentUser and opencode runs as that user.
func newDirs(t testing.TB) dirs {
	t.Helper()
	root := t.TempDir()
	// t.TempDir and its parent are 0700: let the agent user through.
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := dirs{home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws")}
	for _, p := range []string{d.home, d.ws} {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	name := claudetest.AgentUser(t)
	if name == "" {
		return d
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	d.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	for _, p := range []string{d.home, d.ws} {
		if err := os.Chown(p, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// agent is a running `opencode acp` and the client connected to it.
type agent struct {
	cmd    *exec.Cmd
	conn   *acp.ClientSideConnection
	client *client
	stderr *syncBuffer
	start  time.Time
}

// startAgent starts `opencode acp` in d against m.
func startAgent(t testing.TB, m *claudetest.Model, d dirs, choose func(acp.RequestPermissionRequest) acp.RequestPermissionOutcome) *agent {
	t.Helper()
	cmd := exec.Command(Binary(t), "acp")
	cmd.Dir = d.ws
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}, Env(m, d.home)...)
	if d.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: d.cred}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{cmd: cmd, stderr: &syncBuffer{}, client: &client{t: t, choose: choose}}
	cmd.Stderr = a.stderr
	a.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.stop()
		if s := a.stderr.String(); s != "" {
			t.Logf("opencode stderr:\n%s", s)
		}
	})
	a.conn = acp.NewClientSideConnection(a.client, stdin, stdout)
	return a
}

// stop kills opencode and waits for it.
func (a *agent) stop() {
	if a.cmd.ProcessState != nil {
		return
	}
	_ = a.cmd.Process.Kill()
	_ = a.cmd.Wait()
}

// initialize sends initialize, offering no file system or terminal.
func (a *agent) initialize(t testing.TB) acp.InitializeResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	res, err := a.conn.Initialize(ctx, acp.InitializeRequest{
		ProtocolVersion:    acp.ProtocolVersionNumber,
		ClientCapabilities: acp.ClientCapabilities{},
		ClientInfo:         &acp.Implementation{Name: "opencodetest", Version: "0"},
	})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	b, _ := json.Marshal(res)
	t.Logf("initialize: %s", b)
	return res
}

// newSession opens a session in d.ws.
func (a *agent) newSession(t testing.TB, d dirs) acp.NewSessionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	res, err := a.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: d.ws, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/new: %v", err)
	}
	b, _ := json.Marshal(res)
	t.Logf("session/new: %s", b)
	return res
}

// prompt sends text to session id and returns the response.
func (a *agent) prompt(t testing.TB, id acp.SessionId, text string) acp.PromptResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	res, err := a.conn.Prompt(ctx, acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	if err != nil {
		t.Fatalf("session/prompt: %v", err)
	}
	b, _ := json.Marshal(res)
	t.Logf("session/prompt: %s", b)
	return res
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
