package agent

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/coder/acp-go-sdk"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/output"
)

// ACP runs a coding agent that speaks the Agent Client Protocol on its
// stdin and stdout (JSON-RPC 2.0, one message a line): Gemini CLI
// (gemini --acp), Codex through its adapter (codex-acp), opencode
// (opencode acp), or any other. textslash is the protocol's client:
//
//   - the message is one session/prompt turn, the agent's text after its
//     last tool call the reply;
//   - its tool calls become progress lines, its session/request_permission
//     Questions (Run.Ask) answered by its own option ids;
//   - the modes are textslash's own: auto allows every request, ask asks
//     the person, plan refuses every request and puts the session in the
//     agent's plan (or read-only) mode where it has one;
//   - cancel is session/cancel, then the process tree when the turn does
//     not end within interruptWait;
//   - a session is continued by session/load where the agent can load
//     sessions, on a process kept warm between runs (Run.Warm) as Claude
//     Code's is.
//
// textslash offers the agent no file system or terminal of its own: the
// agent reads, writes and runs in its sandbox, as Claude Code does.
type ACP struct {
	// Name is the agent's: gemini, codex, opencode, or acp for a command
	// line of the operator's.
	Name string
	// Bin is the program, Args its arguments, Env what its environment
	// has besides a run's.
	Bin  string
	Args []string
	Env  []string
}

// NamedACP is the ACP agent of that name (contract.IsACPAgent), with its
// program looked up in PATH unless bin says where it is; ok is false for
// another name.
func NamedACP(name, bin string) (a *ACP, ok bool) {
	switch name {
	case contract.AgentGemini:
		// The person's workspace is trusted (an untrusted one runs in a
		// restricted mode), and the CLI runs as one process, not
		// relaunching node with a bigger heap (twice the memory).
		a = &ACP{Name: name, Bin: "gemini", Args: []string{"--acp"},
			Env: []string{"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true"}}
	case contract.AgentCodex:
		// Codex's own sandbox off (textslash's is the run's), and every
		// command Codex does not know to be read-only asked about: the
		// person's mode decides, as for every agent.
		a = &ACP{Name: name, Bin: "codex-acp", Args: []string{"-c", `sandbox_mode="danger-full-access"`, "-c", `approval_policy="untrusted"`}}
	case contract.AgentOpencode:
		// opencode asks nothing by default: made to ask before a command,
		// an edit or a fetch (merged over its config's permissions), the
		// person's mode decides, as for every agent.
		a = &ACP{Name: name, Bin: "opencode", Args: []string{"acp"},
			Env: []string{`OPENCODE_PERMISSION={"bash":"ask","edit":"ask","webfetch":"ask"}`}}
	default:
		if line, found := strings.CutPrefix(name, contract.ACPPrefix); found && strings.TrimSpace(line) != "" {
			return &ACP{Name: "acp", Bin: "bash", Args: []string{"-c", "exec " + line}}, true
		}
		return nil, false
	}
	if bin != "" {
		a.Bin = bin
	}
	return a, true
}

func (a *ACP) bin() string    { return a.Bin }
func (a *ACP) args() []string { return a.Args }

func (a *ACP) name() string {
	if a.Name == "" {
		return "acp"
	}
	return a.Name
}

// Who is the agent as the person is told of it: "Gemini wants to run …".
func (a *ACP) Who() string {
	who := contract.AgentWho(a.Name)
	return strings.ToUpper(who[:1]) + who[1:]
}

// Fix says how the operator gives the agent credentials.
func (a *ACP) Fix() string {
	switch a.Name {
	case contract.AgentGemini:
		return "set GEMINI_API_KEY (or GOOGLE_API_KEY) where textslash runs"
	case contract.AgentCodex:
		return "set OPENAI_API_KEY (or CODEX_API_KEY) where textslash runs"
	case contract.AgentOpencode:
		return "set the key of opencode's provider (ANTHROPIC_API_KEY, OPENAI_API_KEY, …) where textslash runs"
	}
	return "give the agent its credentials where textslash runs"
}

// Run implements Agent.
func (a *ACP) Run(ctx context.Context, r *Run) (Result, error) {
	var res Result
	var err error
	if r.Warm != nil {
		res, err = r.Warm.runACP(ctx, a, r)
	} else {
		var p *acpProc
		if p, err = startACP(ctx, a, r); err != nil {
			return Result{ExitCode: -1}, fmt.Errorf("%s: %w", a.name(), err)
		}
		res, _, err = a.turn(ctx, r, p)
		p.end()
	}
	res.Text, res.Approval, res.Handovers = markerLines(res.Text)
	return res, err
}

// turn runs r's message as one prompt turn on p. stuck: the turn did not
// end when cancelled (or p died), so p must not serve another.
func (a *ACP) turn(ctx context.Context, r *Run, p *acpProc) (res Result, stuck bool, err error) {
	if err := p.openSession(ctx, r.Dir, r.SessionID); err != nil {
		return Result{ExitCode: -1}, false, a.wrap(err)
	}
	fresh := p.session != r.SessionID // a new session, not the one continued
	plan := r.Job.Mode == contract.ModePlan
	mode := p.baseMode
	if plan {
		mode = p.modeLike("plan", "readonly")
	}
	if err := p.setMode(ctx, mode); err != nil {
		p.log.Warn().Err(err).Msg("acp: mode not set")
	}
	t := newACPTurn(ctx, r, a.Who(), p.session)
	p.setTurn(t)
	defer p.setTurn(nil)
	resp, stuck, err := a.prompt(ctx, p, acpPrompt(r, fresh, plan && mode == ""))
	res.InputTokens, res.OutputTokens = tokens(resp)
	// A no with the person's words: the agent is told them in a turn of
	// their own once it has taken the no (ACP's reject carries no text).
	for told := t.takeTold(); told != "" && err == nil && !stuck && ctx.Err() == nil; told = t.takeTold() {
		t.anew()
		resp, stuck, err = a.prompt(ctx, p, []acp.ContentBlock{acp.TextBlock("[The person said no to your request, and: " + told + "]")})
		in, out := tokens(resp)
		res.InputTokens, res.OutputTokens = res.InputTokens+in, res.OutputTokens+out
	}
	in, out := res.InputTokens, res.OutputTokens
	res = t.result()
	res.SessionID, res.InputTokens, res.OutputTokens = p.session, in, out
	if t.costs {
		res.CostUSD, p.cost, p.costs = max(t.cost-p.cost, 0), t.cost, true
	}
	switch {
	case ctx.Err() != nil:
		return res, stuck, fmt.Errorf("%s: %w: %w", a.name(), ErrFailed, ctx.Err())
	case err != nil:
		res.ExitCode = -1
		return res, stuck, a.wrap(err)
	case resp.StopReason == acp.StopReasonRefusal:
		return res, false, fmt.Errorf("%s: %w: the agent refused", a.name(), ErrFailed)
	}
	if plan {
		res.Text = strings.TrimSpace(res.Text) + "\n\n" + msgPlanGo
	}
	return res, false, nil
}

// wrap names the agent in err; an agent saying it needs credentials is
// not set up.
func (a *ACP) wrap(err error) error {
	if errors.Is(err, errAuth) {
		return fmt.Errorf("%s: %w", a.name(), &SetupError{Reason: contract.CutRunes(err.Error(), reasonRunes), Fix: a.Fix()})
	}
	var se *SetupError
	if errors.As(err, &se) || errors.Is(err, ErrFailed) {
		return fmt.Errorf("%s: %w", a.name(), err)
	}
	return fmt.Errorf("%s: %w: %w", a.name(), ErrFailed, err)
}

// prompt sends the turn and waits for its end. When ctx ends first the
// turn is cancelled (session/cancel) and waited for interruptWait more;
// stuck says it did not end then, or the agent exited.
func (a *ACP) prompt(ctx context.Context, p *acpProc, blocks []acp.ContentBlock) (acp.PromptResponse, bool, error) {
	type answer struct {
		resp acp.PromptResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := p.conn.Prompt(context.WithoutCancel(ctx), acp.PromptRequest{SessionId: acp.SessionId(p.session), Prompt: blocks})
		done <- answer{resp, protocolErr(err)}
	}()
	select {
	case an := <-done:
		if an.err != nil && !p.alive() {
			return an.resp, true, fmt.Errorf("%w: the agent exited (code %d): %s", ErrFailed, exitCode(p), output.StderrEnd(p.stderr.Bytes()))
		}
		return an.resp, false, an.err
	case <-ctx.Done():
	}
	if err := p.conn.Cancel(context.WithoutCancel(ctx), acp.CancelNotification{SessionId: acp.SessionId(p.session)}); err != nil {
		p.log.Warn().Err(err).Msg("acp: session/cancel not sent")
	}
	t := time.NewTimer(interruptWait)
	defer t.Stop()
	select {
	case an := <-done:
		return an.resp, !p.alive(), an.err
	case <-t.C:
		p.log.Warn().Msg("acp: the turn did not end after session/cancel; ending the agent")
		return acp.PromptResponse{}, true, ctx.Err()
	}
}

func exitCode(p *acpProc) int {
	<-p.exited
	if p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// acpPrompt is the turn's prompt: the person's message, after textslash's
// system prompt when the session is new (an ACP agent takes no system
// prompt of the client's), and after a plan-only instruction when the
// agent has no plan mode of its own.
func acpPrompt(r *Run, fresh, planOnly bool) []acp.ContentBlock {
	var blocks []acp.ContentBlock
	if fresh {
		blocks = append(blocks, acp.TextBlock("[textslash, for this whole conversation: "+SystemPrompt+"]"))
	}
	if planOnly {
		blocks = append(blocks, acp.TextBlock("[Plan only: change nothing and run nothing that changes anything; answer with your plan.]"))
	}
	return append(blocks, acp.TextBlock(prompt(r)))
}

// squash is s in lower case without spaces, dashes or underscores.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '_':
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// ReasonACPNotLoggedIn begins Check's SetupError's reason when the agent
// said it needs credentials.
const ReasonACPNotLoggedIn = "not logged in"

// Check asks the agent, started by command (a run's: its user, home and
// environment), whether a run could work, without a model call: it
// starts, answers initialize, and opens a session in dir. It returns a
// SetupError when the agent cannot be run or says it needs credentials.
func (a *ACP) Check(ctx context.Context, dir string, command func(ctx context.Context, name string, args ...string) *exec.Cmd) error {
	ctx, cancel := context.WithTimeout(ctx, acpStartTimeout)
	defer cancel()
	p, err := startACP(ctx, a, &Run{Dir: dir, Command: command})
	if err != nil {
		return err
	}
	defer p.end()
	err = p.openSession(ctx, dir, "")
	if errors.Is(err, errAuth) {
		return &SetupError{Reason: ReasonACPNotLoggedIn + ": " + contract.CutRunes(err.Error(), reasonRunes), Fix: a.Fix()}
	}
	return err
}

// tokens are the turn's input and output tokens: the response's usage, or
// Gemini CLI's _meta.quota.token_count; zero where the agent says none.
func tokens(resp acp.PromptResponse) (in, out int) {
	if u := resp.Usage; u != nil {
		return u.InputTokens, u.OutputTokens
	}
	quota, _ := resp.Meta["quota"].(map[string]any)
	count, _ := quota["token_count"].(map[string]any)
	n := func(k string) int {
		f, _ := count[k].(float64)
		return int(f)
	}
	return n("input_tokens"), n("output_tokens")
}
