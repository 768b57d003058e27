package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/acp-go-sdk"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// acpStartTimeout bounds an ACP agent's start: initialize answered.
// Node agents take a second or two; a loaded machine more.
const acpStartTimeout = 60 * time.Second

// acpProc is one ACP agent process and the connection to it: the client
// side of the protocol, which hands what the agent says in a session to
// the current turn (or drops it between turns), and the sessions it
// holds. The agent may hold many sessions; textslash uses one at a time.
type acpProc struct {
	cmd    *exec.Cmd
	conn   *acp.ClientSideConnection
	stdin  io.Closer
	stderr *output.CappedBuffer // read once exited is closed
	exited chan struct{}        // closed once it exited and its output is read
	log    zerolog.Logger

	init acp.InitializeResponse

	// Read and written by the run using it (Warm.busy), or before it
	// started.
	session  string                // the session it holds, "" before one
	modes    *acp.SessionModeState // the session's modes, nil when it offers none
	mode     acp.SessionModeId     // the session's current mode
	baseMode acp.SessionModeId     // the mode the session started in
	cost     float64               // the session's cost so far, where the agent says it
	costs    bool                  // the agent said a cost in this session

	mu   sync.Mutex // guards turn
	turn *acpTurn   // the current run's, nil between runs
}

// startACP starts the agent for r and opens the protocol (initialize).
// Its ctx is r's without the cancel: a process kept warm outlives the run,
// and only its Warm ends it.
func startACP(ctx context.Context, a *ACP, r *Run) (*acpProc, error) {
	p := &acpProc{exited: make(chan struct{}), stderr: &output.CappedBuffer{Max: stderrKeep}}
	p.cmd = a.command(ctx, r)
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		if se := setupStart(p.cmd, err); se != nil {
			return nil, se
		}
		return nil, err
	}
	p.stdin = stdin
	p.log = zerolog.Ctx(ctx).With().Str("agent", a.name()).Int("agent_pid", p.cmd.Process.Pid).Logger()
	p.conn = acp.NewClientSideConnection(acpClient{p}, stdin, stdout)
	p.conn.SetLogger(slog.New(slog.DiscardHandler))
	go func() {
		<-p.conn.Done() // stdout closed: the process is gone or going
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	ictx, cancel := context.WithTimeout(ctx, acpStartTimeout)
	defer cancel()
	p.init, err = p.conn.Initialize(ictx, acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo:      &acp.Implementation{Name: "textslash", Version: "1"},
		// No file system or terminal of textslash's: the agent works in
		// its sandbox with its own tools.
	})
	if err != nil {
		p.end()
		return nil, p.startErr(err)
	}
	p.log.Info().Str("agent_name", agentInfo(p.init)).Bool("load_session", p.init.AgentCapabilities.LoadSession).
		Msg("acp: agent started")
	return p, nil
}

// command is the agent's command for r, started by r.Command in ctx
// without its cancel: a process kept warm outlives the run.
func (a *ACP) command(ctx context.Context, r *Run) *exec.Cmd {
	cmd := r.Command(context.WithoutCancel(ctx), a.bin(), a.args()...)
	cmd.Env = append(cmd.Env, a.Env...)
	return cmd
}

// startErr is the error of an agent that did not answer initialize: a
// SetupError when it exited the way a program that could not run does.
func (p *acpProc) startErr(err error) error {
	if !p.alive() {
		if se := setupExit(sandbox.ExitCode(p.cmd), p.stderr.Bytes()); se != nil {
			return se
		}
		return fmt.Errorf("%w: the agent exited at its start (code %d): %s", ErrFailed, sandbox.ExitCode(p.cmd), output.StderrEnd(p.stderr.Bytes()))
	}
	return fmt.Errorf("%w: the agent did not answer initialize: %w", ErrFailed, err)
}

func agentInfo(init acp.InitializeResponse) string {
	if init.AgentInfo == nil {
		return ""
	}
	return init.AgentInfo.Name + " " + init.AgentInfo.Version
}

func (p *acpProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// end closes the agent's stdin, gives it endGrace to exit, then kills its
// process group and every process carrying its run mark.
func (p *acpProc) end() {
	_ = p.stdin.Close()
	t := time.NewTimer(endGrace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
	}
	sandbox.EndGroup(p.cmd)
	<-p.exited
	p.log.Info().Int("exit_code", sandbox.ExitCode(p.cmd)).Msg("acp: agent ended")
}

// tree is the agent's process and its descendants now: what a home keeps
// running between runs. Tools the agent runs are its descendants only
// while they run; what a turn left running elsewhere is not kept.
func (p *acpProc) tree() []int {
	if !p.alive() {
		return nil
	}
	out := []int{p.cmd.Process.Pid}
	for i := 0; i < len(out) && len(out) < 256; i++ {
		out = append(out, children(out[i])...)
	}
	return out
}

// endLeftovers ends what the turn left running outside the agent's tree.
func (p *acpProc) endLeftovers() {
	sandbox.EndMarked(p.cmd, p.tree()...)
}

// setTurn makes t the receiver of what the agent says; nil drops it.
func (p *acpProc) setTurn(t *acpTurn) {
	p.mu.Lock()
	p.turn = t
	p.mu.Unlock()
}

func (p *acpProc) current() *acpTurn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.turn
}

// errAuth is an agent's answer that it needs credentials (ACP's
// auth_required error).
var errAuth = errors.New("authentication required")

// authCode is ACP's error code for auth_required.
const authCode = -32000

// protocolErr is err, marked errAuth when the agent said it needs
// credentials.
func protocolErr(err error) error {
	var re *acp.RequestError
	if errors.As(err, &re) && re.Code == authCode {
		return fmt.Errorf("%w: %s", errAuth, re.Message)
	}
	return err
}

// openSession makes the process hold session (loaded, where the agent can
// load sessions and holds another) or a new one when session is "" or
// cannot be loaded. What a load replays is dropped: no turn receives it.
func (p *acpProc) openSession(ctx context.Context, dir, session string) error {
	if session != "" && session == p.session {
		return nil
	}
	if session != "" && p.init.AgentCapabilities.LoadSession {
		res, err := p.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(session), Cwd: dir, McpServers: []acp.McpServer{}})
		if err == nil {
			p.held(session, res.Modes)
			return nil
		}
		p.log.Info().Err(err).Str("session", session).Msg("acp: session not loaded; starting a new one")
	}
	res, err := p.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: dir, McpServers: []acp.McpServer{}})
	if err = protocolErr(err); errors.Is(err, errAuth) && p.authenticate(ctx) {
		res, err = p.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: dir, McpServers: []acp.McpServer{}})
		err = protocolErr(err)
	}
	if err != nil {
		return err
	}
	p.held(string(res.SessionId), res.Modes)
	return nil
}

// apiKeyMethods are the agents' own authentication methods taking an API
// key in _meta, by the variable holding it (Gemini CLI's).
var apiKeyMethods = map[string]string{"gemini-api-key": "GEMINI_API_KEY"}

// authenticate logs the agent in by a method its environment has the
// credentials of: one whose variables (an env_var method's) are set, or
// one taking a key that is; it says whether one was taken.
func (p *acpProc) authenticate(ctx context.Context) bool {
	env := envMap(p.cmd.Env)
	for _, m := range p.init.AuthMethods {
		req := acp.AuthenticateRequest{}
		switch {
		case m.EnvVar != nil && hasVars(env, m.EnvVar.Vars):
			req.MethodId = m.EnvVar.Id
		case m.Agent != nil && env[apiKeyMethods[m.Agent.Id]] != "":
			req.MethodId, req.Meta = m.Agent.Id, map[string]any{"api-key": env[apiKeyMethods[m.Agent.Id]]}
		default:
			continue
		}
		if _, err := p.conn.Authenticate(ctx, req); err != nil {
			p.log.Info().Err(err).Str("method", req.MethodId).Msg("acp: authenticate refused")
			continue
		}
		p.log.Info().Str("method", req.MethodId).Msg("acp: authenticated")
		return true
	}
	return false
}

func hasVars(env map[string]string, vars []acp.AuthEnvVar) bool {
	for _, v := range vars {
		if env[v.Name] == "" && !v.Optional {
			return false
		}
	}
	return len(vars) > 0
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func (p *acpProc) held(session string, modes *acp.SessionModeState) {
	p.session, p.modes, p.cost, p.costs = session, modes, 0, false
	p.mode, p.baseMode = "", ""
	if modes != nil {
		p.mode, p.baseMode = modes.CurrentModeId, modes.CurrentModeId
	}
}

// setMode puts the session in mode, when it is not in it already.
func (p *acpProc) setMode(ctx context.Context, mode acp.SessionModeId) error {
	if mode == "" || mode == p.mode {
		return nil
	}
	if _, err := p.conn.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: acp.SessionId(p.session), ModeId: mode}); err != nil {
		return fmt.Errorf("session/set_mode %s: %w", mode, err)
	}
	p.mode = mode
	return nil
}

// modeLike is the id of the session's first mode whose id or name is one
// of names (compared without case, spaces, dashes or underscores).
func (p *acpProc) modeLike(names ...string) acp.SessionModeId {
	if p.modes == nil {
		return ""
	}
	for _, n := range names {
		for _, m := range p.modes.AvailableModes {
			if squash(string(m.Id)) == n || squash(m.Name) == n {
				return m.Id
			}
		}
	}
	return ""
}

// fits says why p cannot serve r, "" when it can: the command line,
// directory and environment it was started with are r's.
func (p *acpProc) misfit(ctx context.Context, a *ACP, r *Run) string {
	if !p.alive() {
		return "it exited"
	}
	cmd := a.command(ctx, r)
	switch {
	case cmd.Err != nil:
		return "its command: " + cmd.Err.Error()
	case cmd.Path != p.cmd.Path || !slices.Equal(cmd.Args, p.cmd.Args):
		return "its command line"
	case cmd.Dir != p.cmd.Dir:
		return "its directory"
	case !slices.Equal(sandbox.WithoutMark(cmd.Env), sandbox.WithoutMark(p.cmd.Env)):
		return "its environment"
	}
	return ""
}

// acpClient is the client side of the protocol: what the agent asks of
// textslash, handed to the current turn.
type acpClient struct{ p *acpProc }

var _ acp.Client = acpClient{}

func (c acpClient) SessionUpdate(ctx context.Context, n acp.SessionNotification) error {
	if t := c.p.current(); t != nil && string(n.SessionId) == c.p.session {
		t.update(n.Update)
	}
	return nil
}

func (c acpClient) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	t := c.p.current()
	if t == nil || string(req.SessionId) != c.p.session {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return t.permission(ctx, req), nil
}

// errNotOffered answers what textslash does not offer an agent: its
// files are the agent's own to read and write, its commands its own to
// run, in its sandbox.
var errNotOffered = acp.NewMethodNotFound("not offered by textslash")

func (acpClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, errNotOffered
}

func (acpClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, errNotOffered
}

func (acpClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, errNotOffered
}

func (acpClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, errNotOffered
}

func (acpClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, errNotOffered
}

func (acpClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, errNotOffered
}

func (acpClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, errNotOffered
}

// runACP is ACP.turn on w's agent process, or on one started for r when
// w has none that fits r; the process is kept for the next run unless the
// turn left it stuck.
func (w *Warm) runACP(ctx context.Context, a *ACP, r *Run) (Result, error) {
	w.busy.Lock()
	defer w.busy.Unlock()
	w.rest.Wake()
	defer w.resting()
	w.mu.Lock()
	p := w.a
	w.mu.Unlock()
	if p != nil {
		if why := p.misfit(ctx, a, r); why != "" {
			p.log.Info().Str("why", why).Msg("acp: the warm agent does not fit the run; restarting it")
			w.dropACP(p)
			p = nil
		}
	}
	reused := p != nil
	if p == nil {
		var err error
		if p, err = startACP(ctx, a, r); err != nil {
			return Result{ExitCode: -1}, fmt.Errorf("%s: %w", a.name(), err)
		}
		w.mu.Lock()
		w.a = p
		w.mu.Unlock()
	}
	res, stuck, err := a.turn(ctx, r, p)
	if stuck || !p.alive() {
		w.dropACP(p)
	} else {
		p.endLeftovers()
	}
	res.Warm = reused
	return res, err
}

// dropACP ends p, if it is still w's process.
func (w *Warm) dropACP(p *acpProc) {
	w.mu.Lock()
	if w.a == p {
		w.a = nil
	}
	w.mu.Unlock()
	p.end()
}
