package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// ErrAgentFailed means the agent ran but did not finish its turn: the model
// API failed, the CLI reported an error, or it exited without a result.
// The Result returned with it carries the agent's own (raw) text.
var ErrAgentFailed = errors.New("agent failed")

// ErrBudget means the run stopped because it reached Job.Budget; the
// Result carries what the agent had said so far.
var ErrBudget = errors.New("budget reached")

const (
	// maxStreamLine is the longest stream-json line kept; longer lines (a
	// huge tool result) are skipped.
	maxStreamLine = 8 << 20
	// defaultOutputCap applies when Run.OutputCap is not set.
	defaultOutputCap = 1 << 20
	// stderrKeep is how much of the CLI's stderr is kept, stderrTail how
	// much of it an error quotes.
	stderrKeep = 64 << 10
	stderrTail = 500
	// progressRunes is the longest detail in a progress line.
	progressRunes = 80
)

// Claude runs the Claude Code CLI headless, speaking stream-json both ways:
//
//	claude -p --input-format stream-json --output-format stream-json --verbose <mode>
//
// The message goes in on stdin, and so do the person's answers to its
// permission questions (control_response) and the messages they add to
// the run (btw); stdin stays open until the first result. Its tool calls
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
// A failed run returns an error wrapping ErrAgentFailed (and ctx's error
// when ctx ended it) together with that raw text.
func (c *Claude) Run(ctx context.Context, r *Run) (Result, error) {
	res, err := c.run(ctx, r, c.bin(), r.SessionID)
	if err != nil && r.SessionID != "" && !res.started && ctx.Err() == nil {
		// The session is gone (another machine, a wiped home): start anew
		// rather than fail the person's message.
		res, err = c.run(ctx, r, c.bin(), "")
	}
	res.Text, res.Approval, res.Handovers = markerLines(res.Text)
	return res.Result, err
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
	if b := r.Job.Budget; b != nil {
		args = append(args, "--max-budget-usd", strconv.FormatFloat(b.LeftUSD, 'f', -1, 64))
	}
	if session != "" {
		args = append(args, "--resume", session)
	}
	cmd := r.Command(ctx, bin, args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return claudeResult{Result: Result{ExitCode: -1}}, fmt.Errorf("claude: %w", err)
	}
	stderr := &sandbox.CappedBuffer{Max: stderrKeep}
	cmd.Stderr = stderr
	in := &claudeInput{w: stdin, quit: make(chan struct{})}
	st := &claudeStream{ctx: ctx, run: r, in: in, dir: r.Dir, progress: r.Progress, cap: r.OutputCap, resumed: session != "",
		held: map[string]string{}, hold: r.Job.Mode != contract.ModeAuto}
	if st.cap <= 0 {
		st.cap = defaultOutputCap
	}
	lines := &lineWriter{max: maxStreamLine, line: st.handle}
	cmd.Stdout = lines

	if err := cmd.Start(); err != nil {
		return claudeResult{Result: Result{ExitCode: -1}}, fmt.Errorf("claude: %w", err)
	}
	in.send(map[string]any{"type": "control_request", "request_id": "init", "request": map[string]any{"subtype": "initialize"}})
	in.user(prompt(r))
	steering := make(chan struct{})
	go func() { defer close(steering); in.steer(r.Steers) }()
	_ = cmd.Wait() // the exit code is read from cmd.ProcessState
	in.close()
	<-steering
	sandbox.EndGroup(cmd)
	lines.flush()

	res := claudeResult{Result: st.result(), started: st.started}
	if r.Job.Mode == contract.ModePlan && st.done && !st.isError {
		// The plan is the reply: the one Claude presented, or its answer.
		if st.plan != "" {
			res.Text, res.Truncated = cutBytes(st.plan, st.cap), len(st.plan) > st.cap
		}
		res.Text = strings.TrimSpace(res.Text) + "\n\n" + MsgPlanGo
	}
	res.ExitCode = sandbox.ExitCode(cmd) // also right when something it started kept the output open
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("claude: %w: %w", ErrAgentFailed, ctx.Err())
	case !st.done:
		return res, fmt.Errorf("claude: %w: exit code %d without a result: %s", ErrAgentFailed, res.ExitCode, stderrEnd(stderr.Bytes()))
	case st.subtype == "error_max_budget_usd":
		return res, fmt.Errorf("claude: %w", ErrBudget)
	case st.isError:
		return res, fmt.Errorf("claude: %w: %s", ErrAgentFailed, cutRunes(firstLine(res.Text), 200))
	case res.ExitCode != 0:
		return res, fmt.Errorf("claude: %w: exit code %d", ErrAgentFailed, res.ExitCode)
	}
	return res, nil
}

// MsgPlanGo ends a plan.
const MsgPlanGo = "Reply go to carry out this plan, or tell me what to change."

// claudeInput is the CLI's stdin: one JSON object per line, written one at
// a time, until the run's first result closes it.
type claudeInput struct {
	w      io.WriteCloser
	mu     sync.Mutex
	closed bool
	quit   chan struct{} // closed with stdin
}

// send writes v as a line; it reports false once stdin is closed.
func (in *claudeInput) send(v any) bool {
	b, err := json.Marshal(v)
	if err != nil || in == nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return false
	}
	_, err = in.w.Write(append(b, '\n'))
	return err == nil
}

// user sends the person's text as a user message.
func (in *claudeInput) user(text string) bool {
	return in.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

// steer hands the messages the person adds to the run to Claude, which
// sees them at its next step, until stdin closes; later ones stay in the
// channel for the runner to report.
func (in *claudeInput) steer(steers <-chan string) {
	if steers == nil {
		return
	}
	for {
		select {
		case <-in.quit:
			return
		default:
		}
		select {
		case text := <-steers:
			if !in.user(text) {
				return // lost the race with the end of the run
			}
		case <-in.quit:
			return
		}
	}
}

// close ends stdin: the CLI finishes what it was given and exits.
func (in *claudeInput) close() {
	if in == nil {
		return
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if !in.closed {
		in.closed = true
		_ = in.w.Close()
		close(in.quit)
	}
}

// claudeStream folds stream-json lines into a Result, and answers the
// CLI's permission requests.
type claudeStream struct {
	ctx      context.Context
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

	text      strings.Builder // assistant text, for a run without a result
	done      bool            // a result line came
	isError   bool
	subtype   string // the result's: success, error_max_budget_usd, ...
	final     string
	sessionID string
	truncated bool
	started   bool // the CLI began a conversation (its system init line came)

	resumed bool  // the CLI continues a session (--resume)
	results int   // result lines so far
	last    usage // the running totals of the previous result
	spent   usage // what the model did in this run
}

func (s *claudeStream) handle(line []byte) {
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
				t := cutBytes(s.text.String(), s.cap)
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
		s.in.close()
	case "control_request":
		if ev.Request != nil && ev.Request.Subtype == "can_use_tool" {
			s.in.send(s.permission(ev.RequestID, ev.Request))
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
	deniedNobody = "Nobody can be asked for permission now, so this was not allowed."
	deniedPlan   = "Plan mode: nothing may change now. Read what you need and present your plan with ExitPlanMode; the person carries it out by replying go."
	deniedPlanOK = "The person reviews your plan on their phone and replies go to carry it out. Stop here, without another word."
)

// permission answers one can_use_tool request: in plan mode by itself,
// in ask mode with the person's answer (this blocks until they answer,
// which is what the CLI does too).
func (s *claudeStream) permission(id string, req *controlRequest) map[string]any {
	deny := func(msg string) map[string]any { return map[string]any{"behavior": "deny", "message": msg} }
	var verdict map[string]any
	switch {
	case req.Tool == "ExitPlanMode" && s.run.Job.Mode == contract.ModePlan:
		s.plan = strings.TrimSpace(str(req.Input["plan"]))
		verdict = deny(deniedPlanOK)
	case s.run.Job.Mode == contract.ModePlan:
		verdict = deny(deniedPlan)
	case s.run.Ask == nil:
		verdict = deny(deniedNobody)
	default:
		q := Question{Tool: req.Tool, Input: req.Input, Rule: ruleFor(req.Tool, req.Input, req.bashRule()),
			Text: questionText(req.Tool, req.Input, s.dir), Session: s.sessionID}
		a := s.run.Ask(s.ctx, q)
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
// that does not say, the running totals less the previous result's; but
// nothing for a resumed session's first result, which cannot tell this
// run's part from the earlier runs'.
func (s *claudeStream) count(ev streamEvent) {
	switch d := ev.Total.minus(s.last); {
	case ev.Since != nil:
		s.spent = s.spent.plus(*ev.Since)
	case (s.results > 0 || !s.resumed) && d.USD >= 0 && d.In >= 0 && d.Out >= 0:
		s.spent = s.spent.plus(d)
	}
	s.last = ev.Total
	s.results++
}

func (s *claudeStream) result() Result {
	res := Result{CostUSD: s.spent.USD, SessionID: s.sessionID, Truncated: s.truncated, InputTokens: s.spent.In, OutputTokens: s.spent.Out}
	res.Text = s.text.String()
	if s.done && s.final != "" { // a run stopped short has no result text: what it said so far
		res.Text, res.Truncated = s.final, false
	}
	if len(res.Text) > s.cap {
		res.Text, res.Truncated = cutBytes(res.Text, s.cap), true
	}
	return res
}

// streamEvent is what one line of Claude Code's stream-json output says.
type streamEvent struct {
	Type      string // "system", "assistant", "user", "result", ...
	Subtype   string // "init", "success", "error_max_turns", ...
	SessionID string
	Subagent  bool // from a subagent: parent_tool_use_id is set

	// assistant
	Text  string     // its text blocks, joined by blank lines
	Tools []toolCall // its tool_use blocks

	// user: the tool uses its tool_result blocks answer
	ToolResults []string

	// result
	Result  string
	IsError bool
	// Total is the session's running total (total_cost_usd, modelUsage);
	// Since what this process counted since its previous result
	// (model_usage_since_last_result), nil when the CLI does not say.
	Total usage
	Since *usage

	// control_request
	RequestID string
	Request   *controlRequest
}

// controlRequest is the request of a control_request line.
type controlRequest struct {
	Subtype     string                       `json:"subtype"`
	Tool        string                       `json:"tool_name"`
	ToolUseID   string                       `json:"tool_use_id"`
	Input       map[string]any               `json:"input"`
	Suggestions []map[string]json.RawMessage `json:"permission_suggestions"`
}

// bashRule is the command prefix Claude Code suggests allowing, if any
// ("npm install:*").
func (r *controlRequest) bashRule() string {
	for _, sug := range r.Suggestions {
		var rules []struct {
			Tool    string `json:"toolName"`
			Content string `json:"ruleContent"`
		}
		if jsonString(sug["type"]) == "addRules" && json.Unmarshal(sug["rules"], &rules) == nil {
			for _, ru := range rules {
				if ru.Tool == "Bash" && ru.Content != "" {
					return ru.Content
				}
			}
		}
	}
	return ""
}

// sessionSuggestions are Claude Code's suggestions, kept for this process
// only: nothing is written to the workspace's settings.
func (r *controlRequest) sessionSuggestions() []map[string]json.RawMessage {
	out := make([]map[string]json.RawMessage, 0, len(r.Suggestions))
	for _, sug := range r.Suggestions {
		c := maps.Clone(sug)
		c["destination"] = json.RawMessage(`"session"`)
		out = append(out, c)
	}
	return out
}

// toolCall is one tool_use block.
type toolCall struct {
	ID    string
	Name  string
	Input map[string]string // the input's string fields
}

// parseStreamLine reads one stream-json line. It fails on anything but a
// JSON object with a type; fields of unexpected types are ignored.
func parseStreamLine(line []byte) (streamEvent, error) {
	var ev streamEvent
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return ev, fmt.Errorf("stream line: %w", err)
	}
	if top == nil {
		return ev, errors.New("stream line: not an object")
	}
	ev.Type = jsonString(top["type"])
	if ev.Type == "" {
		return ev, errors.New("stream line: no type")
	}
	ev.Subtype = jsonString(top["subtype"])
	ev.SessionID = jsonString(top["session_id"])
	ev.Subagent = jsonString(top["parent_tool_use_id"]) != ""

	switch ev.Type {
	case "assistant":
		var msg map[string]json.RawMessage
		if json.Unmarshal(top["message"], &msg) != nil {
			break
		}
		var blocks []map[string]json.RawMessage
		if json.Unmarshal(msg["content"], &blocks) != nil {
			ev.Text = jsonString(msg["content"]) // content may be a plain string
			break
		}
		var texts []string
		for _, b := range blocks {
			switch jsonString(b["type"]) {
			case "text":
				if t := jsonString(b["text"]); t != "" {
					texts = append(texts, t)
				}
			case "tool_use":
				tc := toolCall{ID: jsonString(b["id"]), Name: jsonString(b["name"]), Input: map[string]string{}}
				var in map[string]json.RawMessage
				_ = json.Unmarshal(b["input"], &in)
				for k, v := range in {
					if s := jsonString(v); s != "" {
						tc.Input[k] = s
					}
				}
				ev.Tools = append(ev.Tools, tc)
			}
		}
		ev.Text = strings.Join(texts, "\n\n")
	case "user":
		var msg struct {
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		}
		_ = json.Unmarshal(top["message"], &msg)
		for _, b := range msg.Content {
			if b.Type == "tool_result" && b.ToolUseID != "" {
				ev.ToolResults = append(ev.ToolResults, b.ToolUseID)
			}
		}
	case "result":
		ev.Result = jsonString(top["result"])
		_ = json.Unmarshal(top["is_error"], &ev.IsError)
		ev.Total, _ = modelUsage(top["modelUsage"])
		ev.Total.USD = 0
		_ = json.Unmarshal(top["total_cost_usd"], &ev.Total.USD)
		if u, ok := modelUsage(top["model_usage_since_last_result"]); ok {
			ev.Since = &u
		}
	case "control_request":
		ev.RequestID = jsonString(top["request_id"])
		var req controlRequest
		if json.Unmarshal(top["request"], &req) == nil && ev.RequestID != "" {
			if req.Input == nil {
				req.Input = map[string]any{}
			}
			ev.Request = &req
		}
	}
	return ev, nil
}

// usage is what the model did: its cost in USD as Claude Code reckons
// it, and its tokens, input (with cache reads and writes) and output.
type usage struct {
	USD     float64
	In, Out int
}

func (u usage) plus(v usage) usage {
	return usage{USD: u.USD + v.USD, In: u.In + v.In, Out: u.Out + v.Out}
}

func (u usage) minus(v usage) usage {
	return usage{USD: u.USD - v.USD, In: u.In - v.In, Out: u.Out - v.Out}
}

// modelUsage sums a result's per-model usage (modelUsage and
// model_usage_since_last_result are shaped alike); ok is false when raw
// is not such an object ({} is: nothing was used).
func modelUsage(raw json.RawMessage) (u usage, ok bool) {
	var models map[string]struct {
		In          int     `json:"inputTokens"`
		Out         int     `json:"outputTokens"`
		CacheRead   int     `json:"cacheReadInputTokens"`
		CacheCreate int     `json:"cacheCreationInputTokens"`
		USD         float64 `json:"costUSD"`
	}
	if json.Unmarshal(raw, &models) != nil || models == nil {
		return u, false
	}
	for _, m := range models {
		u = u.plus(usage{USD: m.USD, In: m.In + m.CacheRead + m.CacheCreate, Out: m.Out})
	}
	return u, true
}

// jsonString is raw's value if it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// progressLine says in a few words what a tool call does.
func progressLine(tc toolCall, dir string) string {
	in := tc.Input
	detail := func(keys ...string) string {
		for _, k := range keys {
			if v := cutRunes(firstLine(in[k]), progressRunes); v != "" {
				return v
			}
		}
		return ""
	}
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	switch tc.Name {
	case "Bash":
		if cmd := detail("command"); cmd != "" {
			return "Running `" + cmd + "`"
		}
		return "Running a command"
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return "Editing " + or(cutRunes(relTo(dir, firstLine(or(in["file_path"], in["notebook_path"]))), progressRunes), "a file")
	case "Read":
		return "Reading " + or(cutRunes(relTo(dir, firstLine(in["file_path"])), progressRunes), "a file")
	case "Grep", "Glob":
		return "Searching for " + or(detail("pattern"), "files")
	case "WebFetch":
		return "Fetching " + or(detail("url"), "a web page")
	case "WebSearch":
		return "Searching the web for " + or(detail("query"), "something")
	case "TodoWrite":
		return "Planning"
	case "Task", "Agent":
		return "Delegating: " + or(detail("description", "prompt"), "a subtask")
	default:
		return "Using " + or(cutRunes(firstLine(tc.Name), progressRunes), "a tool")
	}
}

// relTo shows path relative to dir when it lies inside dir.
func relTo(dir, path string) string {
	if dir == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// firstLine is s's first non-blank line, trimmed.
func firstLine(s string) string {
	for line := range strings.Lines(strings.ReplaceAll(s, "\r", "\n")) {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}

// cutRunes shortens s to at most n runes, ending in … when cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// cutBytes shortens s to at most n bytes on a rune boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// stderrEnd quotes the end of a program's stderr for an error.
func stderrEnd(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > stderrTail {
		b = b[len(b)-stderrTail:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	if len(b) == 0 {
		return "no stderr"
	}
	return strings.ToValidUTF8(string(b), "?")
}

// lineWriter splits what is written to it into lines (without the
// newline) for line; a line longer than max is dropped.
type lineWriter struct {
	max  int
	line func([]byte)

	buf  []byte
	skip bool // the current line went past max
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !w.skip {
			if len(w.buf)+len(part) > w.max {
				w.skip, w.buf = true, nil
			} else {
				w.buf = append(w.buf, part...)
			}
		}
		if i < 0 {
			break
		}
		w.end()
		p = p[i+1:]
	}
	return n, nil
}

// flush hands over a last line that had no newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.end()
	}
}

func (w *lineWriter) end() {
	if !w.skip && len(w.buf) > 0 {
		w.line(w.buf)
	}
	w.skip = false
	if cap(w.buf) > 1<<20 {
		w.buf = nil // don't hold on to one huge line's memory
	} else {
		w.buf = w.buf[:0]
	}
}

// prompt is the person's message, plus where their images are.
func prompt(r *Run) string {
	p := r.Job.Text
	if r.Spoken {
		p += "\n\n[The person said this in a voice note, transcribed by speech recognition: some words may be misheard.]"
	}
	if len(r.Attachments) > 0 {
		p += "\n\n[The person attached these files, in the workspace: " + strings.Join(r.Attachments, ", ") + "]"
	}
	if r.Unfetched > 0 {
		p += fmt.Sprintf("\n\n[%d more attachment(s) could not be fetched.]", r.Unfetched)
	}
	return strings.TrimSpace(p)
}
