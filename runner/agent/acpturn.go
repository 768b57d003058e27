package agent

import (
	"context"
	"strings"
	"sync"

	"github.com/coder/acp-go-sdk"

	"github.com/textslash/textslash/contract"
)

// acpTurn folds what an ACP agent says during one prompt turn into a
// Result, and answers its permission requests by the run's mode.
type acpTurn struct {
	run     *Run
	who     string // the agent, as questions name it
	session string
	done    <-chan struct{} // the run's end: a question waiting for the person stops then
	cap     int

	mu sync.Mutex // what follows: updates come in order, permission requests beside them
	// reply is the agent's text since its last tool call, earlier all of
	// it before that: the final answer follows the work.
	reply, earlier strings.Builder
	truncated      bool
	calls          map[acp.ToolCallId]*acpCall
	planned        bool
	cost           float64 // the session's cost, as the agent last said it
	costs          bool
	told           []string // the person's words with their noes, not yet told
}

// acpCall is one tool call as the turn knows it so far.
type acpCall struct {
	kind   acp.ToolKind
	title  string
	raw    any
	locs   []acp.ToolCallLocation
	said   bool // its progress line was reported
	denied bool // the person (or the mode) refused it
	asked  bool // a permission request came for it
}

func newACPTurn(ctx context.Context, r *Run, who, session string) *acpTurn {
	c := r.OutputCap
	if c <= 0 {
		c = defaultOutputCap
	}
	return &acpTurn{run: r, who: who, session: session, done: ctx.Done(), cap: c, calls: map[acp.ToolCallId]*acpCall{}}
}

// holds says whether tool calls may wait for permission, so that their
// progress lines wait until they are allowed or run.
func (t *acpTurn) holds() bool { return t.run.Job.Mode != contract.ModeAuto }

// update takes one session/update of the turn.
func (t *acpTurn) update(u acp.SessionUpdate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil:
		t.add(u.AgentMessageChunk.Content.Text.Text)
	case u.ToolCall != nil:
		tc := u.ToolCall
		c := t.call(tc.ToolCallId)
		c.kind, c.title, c.raw, c.locs = tc.Kind, tc.Title, tc.RawInput, tc.Locations
		t.newSegment()
		if t.due(c, tc.Status) {
			t.say(c)
		}
	case u.ToolCallUpdate != nil:
		t.callUpdate(u.ToolCallUpdate)
	case u.Plan != nil && !t.planned && len(u.Plan.Entries) > 0:
		t.planned = true
		t.progress("Planning")
	case u.UsageUpdate != nil && u.UsageUpdate.Cost != nil && strings.EqualFold(u.UsageUpdate.Cost.Currency, "USD"):
		t.cost, t.costs = u.UsageUpdate.Cost.Amount, true
	}
}

func (t *acpTurn) callUpdate(u *acp.SessionToolCallUpdate) {
	c := t.call(u.ToolCallId)
	if u.Kind != nil {
		c.kind = *u.Kind
	}
	if u.Title != nil && *u.Title != "" {
		c.title = *u.Title
	}
	if u.RawInput != nil {
		c.raw = u.RawInput
	}
	if len(u.Locations) > 0 {
		c.locs = u.Locations
	}
	if s := u.Status; s != nil && t.due(c, *s) {
		t.say(c)
	}
}

// due says whether c's progress line is due at status. In auto mode a
// call is told once it names what it does; else once it runs, but a call
// of a kind that is asked about waits for its question's yes (opencode
// marks a command in progress before it asks), or its end when the agent
// did not ask (Codex runs a command it knows to be read-only). A denied
// call has no line.
func (t *acpTurn) due(c *acpCall, status acp.ToolCallStatus) bool {
	switch {
	case c.denied:
		return false
	case status == acp.ToolCallStatusCompleted:
		return true
	case !t.holds():
		return status == acp.ToolCallStatusInProgress || named(c.kind, c.raw)
	}
	return status == acp.ToolCallStatusInProgress && !askedAbout(c.kind)
}

func (t *acpTurn) call(id acp.ToolCallId) *acpCall {
	c := t.calls[id]
	if c == nil {
		c = &acpCall{}
		t.calls[id] = c
	}
	return c
}

// add appends agent text to the reply, up to the cap.
func (t *acpTurn) add(s string) {
	if left := t.cap - t.earlier.Len() - t.reply.Len(); len(s) > left {
		s, t.truncated = contract.CutBytes(s, max(left, 0)), true
	}
	t.reply.WriteString(s)
}

// newSegment starts the reply anew at a tool call, keeping what was said
// before for a turn that ends without text after its calls.
func (t *acpTurn) newSegment() {
	if t.reply.Len() == 0 {
		return
	}
	if t.earlier.Len() > 0 {
		t.earlier.WriteString("\n\n")
	}
	t.earlier.WriteString(strings.TrimSpace(t.reply.String()))
	t.reply.Reset()
}

// say reports c's progress line, once.
func (t *acpTurn) say(c *acpCall) {
	if c.said {
		return
	}
	c.said = true
	tc := acpTool(c.kind, c.title, c.raw, c.locs)
	line := progressLine(tc, t.run.Dir)
	if strings.HasPrefix(line, "Using ") && c.title != "" {
		line = contract.CutRunes(contract.FirstLine(c.title), progressRunes)
	}
	t.progress(line)
}

func (t *acpTurn) progress(line string) {
	if t.run.Progress != nil && line != "" {
		t.run.Progress(line)
	}
}

func (t *acpTurn) result() Result {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := strings.TrimSpace(t.reply.String())
	if text == "" {
		text = t.earlier.String()
	}
	return Result{Text: text, Truncated: t.truncated}
}

// permission answers a session/request_permission: by the mode (auto
// allows, plan refuses), else by the person (Run.Ask), asked the way
// Claude Code's questions are, with the call taken as Claude Code's tool.
func (t *acpTurn) permission(ctx context.Context, req acp.RequestPermissionRequest) acp.RequestPermissionResponse {
	t.mu.Lock()
	c := t.call(req.ToolCall.ToolCallId)
	c.asked = true
	if k := req.ToolCall.Kind; k != nil {
		c.kind = *k
	}
	if ti := req.ToolCall.Title; ti != nil && *ti != "" {
		c.title = *ti
	}
	if req.ToolCall.RawInput != nil {
		c.raw = req.ToolCall.RawInput
	}
	if len(req.ToolCall.Locations) > 0 {
		c.locs = req.ToolCall.Locations
	}
	tc := acpTool(c.kind, c.title, c.raw, c.locs)
	t.mu.Unlock()

	ans := t.decide(ctx, tc)
	decision := ans.Decision
	t.mu.Lock()
	if decision == contract.AnswerDeny {
		c.denied = true
		if personSaid(ans.Text) {
			t.told = append(t.told, ans.Text)
		}
	} else {
		t.say(c)
	}
	t.mu.Unlock()
	return permissionAnswer(req.Options, decision)
}

// decide is the answer to tc's permission request.
func (t *acpTurn) decide(ctx context.Context, tc toolCall) Answer {
	switch {
	case t.run.Job.Mode == contract.ModeAuto:
		return Answer{Decision: contract.AnswerAllow}
	case t.run.Job.Mode == contract.ModePlan, t.run.Ask == nil:
		return Answer{Decision: contract.AnswerDeny}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-t.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	in := anyInput(tc)
	suggested := ""
	a := t.run.Ask(ctx, Question{Tool: tc.Name, Input: in, Rule: ruleFor(tc.Name, in, suggested),
		Text: questionText(t.who, tc.Name, in, t.run.Dir), Session: t.session})
	return a
}

// personSaid says whether a no's text is the person's own words, not one
// of textslash's (DeniedNo, DeniedNoAnswer, …): those the agent already
// knows from the reject.
func personSaid(text string) bool {
	switch strings.TrimSpace(text) {
	case "", contract.DeniedNo, contract.DeniedNoAnswer, contract.DeniedNobody, contract.DeniedStopped:
		return false
	}
	return true
}

// anew starts the reply anew, for a turn of the run's after the first:
// its answer is the reply.
func (t *acpTurn) anew() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.newSegment()
}

// takeTold is what the person said with their noes since last taken,
// one line each; "" for nothing.
func (t *acpTurn) takeTold() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	told := strings.Join(t.told, "\n")
	t.told = nil
	return told
}
