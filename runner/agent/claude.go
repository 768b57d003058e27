package agent

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

const (
	// maxStreamLine is the longest stream-json line kept; longer lines (a
	// huge tool result) are skipped.
	maxStreamLine = 8 << 20
	// defaultOutputCap applies when Run.OutputCap is not set.
	defaultOutputCap = 1 << 20
	// stderrKeep is how much of the CLI's stderr is kept (an error quotes
	// its end: output.StderrEnd).
	stderrKeep = 64 << 10
	// progressRunes is the longest detail in a progress line.
	progressRunes = 80
)

// Claude runs the Claude Code CLI headless, speaking stream-json both ways:
//
//	claude -p --input-format stream-json --output-format stream-json --verbose <mode>
//
// The message goes in on stdin, and so do the person's answers to its
// permission questions (control_response) and the messages they add to
// the run (btw); stdin stays open until the first result, or, on a CLI
// kept between runs (Run.Warm), for the next run's message. Its tool calls
// become progress lines (where a call may need permission, once it is
// allowed) and its final result the reply. The mode is the
// job's: auto skips permissions (Claude Code refuses that as root, so
// Run.Command must run it as an unprivileged user), ask sends every tool
// use Claude Code asks permission for to Run.Ask (--permission-prompt-tool
// stdio), plan lets Claude only plan: the plan is the reply.
type Claude struct {
	// Bin is the claude executable; "claude" (looked up in PATH) if empty.
	Bin string
	// AppendSystemPrompt is added to Claude Code's system prompt when set.
	AppendSystemPrompt string
}

// Run implements Agent. Result.Text is the CLI's last result text, or the
// assistant's text so far when there was none, cut at r.OutputCap bytes.
// A failed run returns an error wrapping ErrFailed (and ctx's error
// when ctx ended it) together with that raw text.
func (c *Claude) Run(ctx context.Context, r *Run) (Result, error) {
	res, err := c.start(ctx, r, r.SessionID)
	if err != nil && r.SessionID != "" && !res.started && ctx.Err() == nil {
		// The session is gone (another machine, a wiped home): start anew
		// rather than fail the person's message.
		res, err = c.start(ctx, r, "")
	}
	res.Text, res.Approval, res.Handovers = markerLines(res.Text)
	return res.Result, err
}

// Describe answers prompt (handover.Describer, which captions the
// images a run handed over): the prompt in a fresh session in plan
// mode, where Claude may read the image but change nothing; the reply is
// its answer, without the closing line of a plan.
func (c *Claude) Describe(ctx context.Context, r *Run, prompt string) (Result, error) {
	d := *r
	d.Job.Text, d.Job.Mode, d.Job.Action = prompt, contract.ModePlan, ""
	d.SessionID, d.SessionTotal, d.Attachments, d.Unfetched, d.Spoken = "", nil, nil, 0, false
	d.Ask, d.Steers, d.Progress, d.Warm = nil, nil, nil, nil
	res, err := c.run(ctx, &d, c.bin(), "")
	res.Text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(res.Text), msgPlanGo))
	return res.Result, err
}

// start runs r continuing session: on r.Warm when set, else on a CLI of
// its own.
func (c *Claude) start(ctx context.Context, r *Run, session string) (claudeResult, error) {
	if r.Warm != nil {
		return r.Warm.run(ctx, c, r, session)
	}
	return c.run(ctx, r, c.bin(), session)
}

// bin is the CLI to run: Bin, else claude in PATH.
func (c *Claude) bin() string {
	if c.Bin == "" {
		return "claude"
	}
	return c.Bin
}

// markerLines takes the marker lines out of Claude's reply: ::approval::
// and the lines handing something over (handoverLines), alone on their
// lines, and returns what they hand over.
func markerLines(text string) (reply string, approval bool, handed []Handover) {
	reply, handed = handoverLines(text)
	if !strings.Contains(reply, "::approval::") {
		return reply, false, handed
	}
	var keep []string
	for _, line := range strings.Split(reply, "\n") {
		if strings.TrimSpace(line) == "::approval::" {
			approval = true
			continue
		}
		keep = append(keep, line)
	}
	return strings.TrimSpace(strings.Join(keep, "\n")), approval, handed
}

// claudeResult is a Result and whether the CLI got as far as starting a
// conversation.
type claudeResult struct {
	Result
	started bool
}

func (c *Claude) run(ctx context.Context, r *Run, bin, session string) (claudeResult, error) {
	cap := 0.0
	if b := r.Job.Budget; b != nil {
		cap = b.LeftUSD
	}
	cmd := r.Command(ctx, bin, c.args(r, session, cap)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return claudeResult{Result: Result{ExitCode: -1}}, fmt.Errorf("claude: %w", err)
	}
	stderr := &output.CappedBuffer{Max: stderrKeep}
	cmd.Stderr = stderr
	in := &claudeInput{w: stdin, quit: make(chan struct{})}
	st := newStream(r, in, session)
	lines := &output.LineWriter{Max: maxStreamLine, Line: func(line []byte) { st.handle(ctx, line) }}
	cmd.Stdout = lines

	if err := cmd.Start(); err != nil {
		if se := setupStart(cmd, err); se != nil {
			err = se
		}
		return claudeResult{Result: Result{ExitCode: -1}}, fmt.Errorf("claude: %w", err)
	}
	in.initialize()
	in.user(prompt(r))
	steering := make(chan struct{})
	go func() { defer close(steering); in.steer(r.Steers, in.quit) }()
	_ = cmd.Wait() // the exit code is read from cmd.ProcessState
	in.close()
	<-steering
	sandbox.EndGroup(cmd)
	lines.Flush()
	// The exit code from ProcessState: also right when something it
	// started kept the output open.
	return finish(ctx, r, st, sandbox.ExitCode(cmd), stderr.Bytes)
}

// args is the CLI's command line for r: in r's mode, continuing session
// when it is not empty, and when r has a budget, stopping once the
// process has spent capUSD.
func (c *Claude) args(r *Run, session string, capUSD float64) []string {
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"}
	switch r.Job.Mode {
	case contract.ModeAuto:
		args = append(args, "--dangerously-skip-permissions")
	case contract.ModePlan:
		// Bash in plan mode otherwise needs a check only Anthropic's servers run.
		args = append(args, "--permission-mode", "plan", "--permission-prompt-tool", "stdio",
			"--settings", `{"useAutoModeDuringPlan":false}`)
	default:
		// Said, not left out: a session resumed after a plan would go on
		// in plan mode, refusing commands without asking.
		args = append(args, "--permission-mode", "default", "--permission-prompt-tool", "stdio")
	}
	if c.AppendSystemPrompt != "" {
		args = append(args, "--append-system-prompt", c.AppendSystemPrompt)
	}
	if r.Job.Budget != nil {
		args = append(args, "--max-budget-usd", strconv.FormatFloat(capUSD, 'f', -1, 64))
	}
	if session != "" {
		args = append(args, "--resume", session)
	}
	return args
}

// newStream is a stream for run r on a CLI whose stdin is in, continuing
// session ("" for a new one).
func newStream(r *Run, in *claudeInput, session string) *claudeStream {
	st := &claudeStream{run: r, in: in, dir: r.Dir, progress: r.Progress, cap: r.OutputCap,
		held: map[string]string{}, hold: r.Job.Mode != contract.ModeAuto}
	st.last, st.unknown = sessionTotal(r, session)
	if st.cap <= 0 {
		st.cap = defaultOutputCap
	}
	return st
}

// sessionTotal is the running total a CLI continuing session (for run r)
// starts from: nothing for a new session, else the session's at its last
// result (Run.SessionTotal); unknown when that is not known.
func sessionTotal(r *Run, session string) (total Usage, unknown bool) {
	switch {
	case session == "":
		return Usage{}, false
	case r.SessionTotal != nil:
		return *r.SessionTotal, false
	}
	return Usage{}, true
}

// finish makes a run's result of its stream once the stream is done
// with: the CLI exited with exitCode (0 for a warm CLI still running),
// and stderr is what it wrote there, read only when quoted.
func finish(ctx context.Context, r *Run, st *claudeStream, exitCode int, stderr func() []byte) (claudeResult, error) {
	res := claudeResult{Result: st.result(), started: st.started}
	if r.Job.Mode == contract.ModePlan && st.done && !st.isError {
		// The plan is the reply: the one Claude presented, or its answer.
		if st.plan != "" {
			res.Text, res.Truncated = contract.CutBytes(st.plan, st.cap), len(st.plan) > st.cap
		}
		res.Text = strings.TrimSpace(res.Text) + "\n\n" + msgPlanGo
	}
	res.ExitCode = exitCode
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("claude: %w: %w", ErrFailed, ctx.Err())
	case !st.done && !st.started && setupExit(res.ExitCode, stderr()) != nil:
		// The CLI did not run at all: bwrap or env could not find or
		// execute it (or node).
		se := setupExit(res.ExitCode, stderr())
		se.Err = fmt.Errorf("exit code %d", res.ExitCode)
		return res, fmt.Errorf("claude: %w", se)
	case !st.done:
		return res, fmt.Errorf("claude: %w: exit code %d without a result: %s", ErrFailed, res.ExitCode, output.StderrEnd(stderr()))
	case st.subtype == "error_max_budget_usd":
		return res, fmt.Errorf("claude: %w", ErrBudget)
	case st.isError && st.authFailed:
		// Not logged in, or a key refused: every run fails so until the
		// operator gives it credentials.
		return res, fmt.Errorf("claude: %w", &SetupError{Reason: contract.CutRunes(contract.FirstLine(res.Text), reasonRunes), Fix: FixClaudeAuth})
	case st.isError:
		return res, fmt.Errorf("claude: %w: %s", ErrFailed, contract.CutRunes(contract.FirstLine(res.Text), 200))
	case res.ExitCode != 0:
		return res, fmt.Errorf("claude: %w: exit code %d", ErrFailed, res.ExitCode)
	}
	return res, nil
}

// msgPlanGo ends a plan.
const msgPlanGo = "Reply go to carry out this plan, or tell me what to change."

// claudeStream folds stream-json lines into a Result, and answers the
// CLI's permission requests.
type claudeStream struct {
	run      *Run
	in       *claudeInput
	dir      string
	progress func(string)
	cap      int
	plan     string // the plan Claude proposed (plan mode)
	// hold: tool calls may wait for permission (ask and plan modes), so
	// their progress lines are held (by tool use id) until allowed, or
	// until they ran without asking; a denied call's is dropped.
	hold bool
	held map[string]string
	// turnEnd, when set, is called at a result instead of closing stdin.
	turnEnd func()

	text    strings.Builder // assistant text, for a run without a result
	done    bool            // a result line came
	isError bool
	// authFailed: the CLI could not authenticate to the model API (not
	// logged in, a key refused): its assistant message said
	// authentication_failed.
	authFailed bool
	subtype    string // the result's: success, error_max_budget_usd, ...
	final      string
	sessionID  string
	truncated  bool
	started    bool // the CLI began a conversation (its system init line came)
	results    int  // result lines so far

	// last is the session's running total at the previous result (or
	// before the first: nothing for a new session, else
	// Run.SessionTotal); unknown says it is not known, as for a session
	// resumed without its total.
	last    Usage
	unknown bool
	spent   Usage // what the model did in this run
}

// handle folds one line in; ctx is the run's, for the person's answer to
// a permission request.
func (s *claudeStream) handle(ctx context.Context, line []byte) {
	ev, err := parseStreamLine(line)
	if err != nil {
		return // not ours to show: stray output, a skipped line
	}
	if s.sessionID == "" || ev.Type == "result" {
		if ev.SessionID != "" {
			s.sessionID = ev.SessionID
		}
	}
	switch ev.Type {
	case "system":
		s.started = true
	case "assistant":
		if ev.APIError == apiErrorAuth {
			s.authFailed = true
		}
		for _, tc := range ev.Tools {
			if s.hold && tc.ID != "" {
				s.held[tc.ID] = progressLine(tc, s.dir)
			} else {
				s.report(progressLine(tc, s.dir))
			}
		}
		if ev.Text != "" && !ev.Subagent {
			if s.text.Len() > 0 {
				s.text.WriteString("\n\n")
			}
			s.text.WriteString(ev.Text)
			if s.text.Len() > s.cap {
				// Keep only what can still be returned.
				t := contract.CutBytes(s.text.String(), s.cap)
				s.text.Reset()
				s.text.WriteString(t)
				s.truncated = true
			}
		}
	case "user":
		for _, id := range ev.ToolResults {
			s.release(id) // it ran without asking
		}
	case "result":
		// The last one counts: background work can start another turn.
		s.done, s.isError, s.final, s.subtype = true, ev.IsError, ev.Result, ev.Subtype
		s.count(ev)
		if s.turnEnd != nil {
			s.turnEnd() // a warm CLI: its stdin stays open for the next run
		} else {
			s.in.close()
		}
	case "control_request":
		if ev.Request != nil && ev.Request.Subtype == "can_use_tool" {
			s.in.send(s.permission(ctx, ev.RequestID, ev.Request))
		}
	}
}

// report sends a progress line.
func (s *claudeStream) report(line string) {
	if s.progress != nil {
		s.progress(line)
	}
}

// release sends the held progress line of tool use id, if any.
func (s *claudeStream) release(id string) {
	if line, ok := s.held[id]; ok {
		delete(s.held, id)
		s.report(line)
	}
}

// Texts Claude is told when it may not do something.
const (
	deniedPlan   = "Plan mode: nothing may change now. Read what you need and present your plan with ExitPlanMode; the person carries it out by replying go."
	deniedPlanOK = "The person reviews your plan on their phone and replies go to carry it out. Stop here, without another word."
)

// permission answers one can_use_tool request: in plan mode by itself,
// in ask mode with the person's answer (this blocks until they answer,
// which is what the CLI does too).
func (s *claudeStream) permission(ctx context.Context, id string, req *controlRequest) map[string]any {
	deny := func(msg string) map[string]any { return map[string]any{"behavior": "deny", "message": msg} }
	var verdict map[string]any
	switch {
	case req.Tool == "ExitPlanMode" && s.run.Job.Mode == contract.ModePlan:
		s.plan = strings.TrimSpace(str(req.Input["plan"]))
		verdict = deny(deniedPlanOK)
	case s.run.Job.Mode == contract.ModePlan:
		verdict = deny(deniedPlan)
	case s.run.Ask == nil:
		verdict = deny(contract.DeniedNobody)
	default:
		q := Question{Tool: req.Tool, Input: req.Input, Rule: ruleFor(req.Tool, req.Input, req.bashRule()),
			Text: questionText("Claude", req.Tool, req.Input, s.dir), Session: s.sessionID}
		a := s.run.Ask(ctx, q)
		if a.Decision == contract.AnswerDeny {
			verdict = deny(a.Text)
			break
		}
		verdict = map[string]any{"behavior": "allow", "updatedInput": req.Input}
		if a.Decision == contract.AnswerAlways && len(req.Suggestions) > 0 {
			// Claude Code's own "don't ask again", for this process.
			verdict["updatedPermissions"] = req.sessionSuggestions()
		}
	}
	if verdict["behavior"] == "allow" {
		s.release(req.ToolUseID)
	} else {
		delete(s.held, req.ToolUseID)
	}
	return map[string]any{"type": "control_response",
		"response": map[string]any{"subtype": "success", "request_id": id, "response": verdict}}
}

// count adds what a result says the model did since the process's
// previous result (model_usage_since_last_result), once: the result's
// running totals (total_cost_usd, modelUsage) are the session's, and a
// resumed session's start with what its earlier runs cost. From a CLI
// that does not say (2.1.197), the running totals less the previous
// result's, or for a resumed session's first result less the session's
// total at its last result (Run.SessionTotal); nothing when that is not
// known, as this run's part cannot be told from the earlier runs'.
func (s *claudeStream) count(ev streamEvent) {
	switch d := ev.Total.minus(s.last); {
	case ev.Since != nil:
		s.spent = s.spent.plus(*ev.Since)
	case !s.unknown && d.USD >= 0 && d.In >= 0 && d.Out >= 0:
		s.spent = s.spent.plus(d)
	}
	s.last, s.unknown = ev.Total, false
	s.results++
}

func (s *claudeStream) result() Result {
	res := Result{CostUSD: s.spent.USD, SessionID: s.sessionID, Truncated: s.truncated, InputTokens: s.spent.In, OutputTokens: s.spent.Out}
	if s.results > 0 {
		total := s.last
		res.SessionTotal = &total
	}
	res.Text = s.text.String()
	if s.done && s.final != "" { // a run stopped short has no result text: what it said so far
		res.Text, res.Truncated = s.final, false
	}
	if len(res.Text) > s.cap {
		res.Text, res.Truncated = contract.CutBytes(res.Text, s.cap), true
	}
	return res
}
