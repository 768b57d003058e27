// Package fsm is the per-user state machine of the dispatcher, without any
// I/O: given a user's state and one input it returns the next state and
// the effects the dispatcher must carry out, in order. The state is the
// dispatcher's record of the user, contract.UserState, in its states
// (contract.StateIdle, …):
//
//	idle ──message──▶ working ──done──▶ idle (or the next queued message)
//	                     │ done with changes
//	                     ▼
//	            awaiting_approval ──approve/reject──▶ working (commit or revert)
//	                     └──cancel / timeout──▶ idle (changes stay on disk)
//
//	working ──question──▶ awaiting_permission ──answer / timeout──▶ working
//	                              └──cancel──▶ idle; done──▶ as from working
//
// While the agent waits for a permission answer, the person's next message
// (anything but a keyword) is that answer.
package fsm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
)

// Keywords a person may send as their whole message (any case, trimmed).
const (
	Cancel  = "cancel"
	Approve = "approve"
	Reject  = "reject"
	Status  = "status"
	More    = "more"
	New     = "new"
	Help    = "help"
	// Cost reports what the person's runs cost, and their budgets.
	Cost = "cost"
	// Go carries out the plan just made, for a person in plan mode (for
	// anyone else "go" is a message like any other).
	Go = "go"
	// Keywords with an argument: "mode ask", "steer on", "btw use pnpm".
	Mode  = "mode"
	Steer = "steer"
	Btw   = "btw"
	// Scheduled messages: "at 18:00 run the tests", "in 2h look" (an at),
	// "every weekday 9:00 summarize open PRs", "schedules", "unschedule
	// 3f2a9c", "tz Europe/Paris".
	At         = "at"
	Every      = "every"
	Schedules  = "schedules"
	Unschedule = "unschedule"
	Zone       = "tz"
	// An admin's: pair makes a pairing code, people lists those paired
	// in, "revoke +15551234567" unpairs one.
	Pair   = "pair"
	People = "people"
	Revoke = "revoke"
	// Projects: "clone <url> [name]" adds one (a job of the runner's),
	// "projects" lists them, "use <name>" switches to one.
	Clone    = "clone"
	Projects = "projects"
	Use      = "use"
	// "branches on": each message runs on a branch of its own.
	Branches = "branches"
)

var keywords = []string{Cancel, Approve, Reject, Status, More, New, Help, Go, Cost, Schedules, Pair, People, Projects}

// ParseKeyword reports whether text is a keyword: one of the words above
// as the whole message (any case), or mode, steer or btw followed by their
// argument (arg).
func ParseKeyword(text string) (kw, arg string, ok bool) {
	t := strings.TrimSpace(text)
	k := strings.ToLower(t)
	if slices.Contains(keywords, k) {
		return k, "", true
	}
	first, rest, _ := strings.Cut(t, " ")
	rest = strings.TrimSpace(rest)
	switch first = strings.ToLower(strings.TrimRight(first, ":,")); first {
	case Mode, Steer, Branches:
		if !strings.Contains(rest, " ") && !strings.Contains(rest, "\n") {
			return first, strings.ToLower(rest), true
		}
	case Btw:
		if rest != "" {
			return Btw, rest, true
		}
	case At, Every:
		if looksScheduled(first, rest) {
			return first, rest, true
		}
	case "in":
		// "in 2h <task>" is an at; "in src, rename …" a message.
		if looksScheduled(At, t) {
			return At, "in " + rest, true
		}
	case Unschedule, Zone, Revoke:
		if rest != "" && !strings.ContainsAny(rest, " \n") {
			return first, rest, true
		}
	case Use:
		// "use pnpm" is a message unless the person has a project of
		// that name: the dispatcher tells (Input.Exists).
		if rest != "" && !strings.ContainsAny(rest, " \n") {
			return Use, strings.ToLower(rest), true
		}
	case Clone:
		// clone <url> [name]: a URL has a scheme or is scp-like.
		f := strings.Fields(rest)
		if len(f) >= 1 && len(f) <= 2 && strings.Contains(f[0], ":") {
			return Clone, strings.Join(f, " "), true
		}
	}
	return "", "", false
}

// ParseAnswer reads the person's answer to a question: yes (allow), always,
// or no; anything else is a no whose text the agent is told ("no, use
// pnpm" tells it "use pnpm").
func ParseAnswer(text string) (answer, reason string) {
	t := strings.TrimSpace(text)
	word, rest, _ := strings.Cut(t, " ")
	word = strings.ToLower(strings.TrimRight(word, ".,!:;"))
	rest = strings.TrimSpace(rest)
	switch word {
	case "yes", "y", "ok", "okay", "allow", "sure":
		if rest == "" {
			return contract.AnswerAllow, ""
		}
	case "always":
		if rest == "" {
			return contract.AnswerAlways, ""
		}
	case "no", "n", "deny", "nope":
		return contract.AnswerDeny, rest
	}
	return contract.AnswerDeny, t
}

// Texts the dispatcher sends on its own.
const (
	MsgQueued        = "Got it, I'll process this next."
	MsgQueuedPlace   = "Got it. You're %s in line." // with the place: 2nd, 3rd…
	MsgQueueFull     = "Queue full, please wait for current tasks to finish."
	MsgEmpty         = "I received an empty message."
	MsgCancelled     = "Cancelled. Nothing is running now."
	MsgCancelledKept = "Cancelled. The changes stay in your workspace, uncommitted."
	MsgNothingToStop = "Nothing is running, so there is nothing to cancel."
	MsgNoApproval    = "Nothing is waiting for your approval."
	MsgStillWorking  = "Nothing is waiting for your approval yet: the agent is still working. Reply cancel to stop it."
	MsgApproving     = "Approved. Committing the changes…"
	MsgRejecting     = "Rejected. Discarding the changes…"
	MsgNewSession    = "OK: your next message starts a new session."
	MsgAllowed       = "Allowed. Claude goes on."
	MsgAlways        = "Allowed, and I won't ask again for that in this session."
	MsgDenied        = "Denied. Claude was told no."
	MsgDeniedReason  = "Denied. Claude was told: "
	// MsgAnswered starts the reply to an answer with words of the person's,
	// which may have been meant as a new instruction: it names the question
	// they answered.
	MsgAnswered = "Your reply answered: "
	MsgAnswerFirst   = "Claude is waiting for your answer to its question: reply yes, no or always (or cancel)."
	// DeniedNoAnswer is what the agent is told when nobody answered.
	DeniedNoAnswer = "The person did not answer in time, so this was not allowed."
	MsgSteered     = "Added to the current run: Claude sees it at its next step."
	MsgNotRunning  = "Nothing is running, so I sent it as a new message."
	MsgSteerOn     = "OK: messages you send while a run works are added to it (btw …). Reply steer off to queue them again."
	MsgSteerOff    = "OK: messages you send while a run works wait their turn. Start one with btw to add it to the run."
	MsgSteerUsage  = "Reply steer on (messages sent while a run works are added to it) or steer off (they wait their turn)."
	MsgModeUsage   = `Modes:
  mode ask   Claude asks before each change (reply yes, no or always)
  mode auto  Claude acts without asking, inside your workspace's sandbox
  mode plan  Claude only plans; reply go to carry the plan out`
	MsgModeAuto  = "Mode auto: Claude acts without asking, inside your workspace's sandbox."
	MsgModeAsk   = "Mode ask: Claude asks before each change. Reply yes, no (with a reason if you like) or always."
	MsgModePlan  = "Mode plan: Claude plans without changing anything, and the plan is its reply. Reply go to carry it out."
	MsgGoWorking = "Claude is still working. Reply go once the plan has arrived."
	MsgZone      = "OK: your schedules use the time zone "
	MsgZoneUsage = "Say tz and a time zone's name, like tz Europe/Paris or tz America/New_York."
	// Projects (with project names).
	MsgUse           = "Now in project %s: your messages run there."
	MsgUseRunning    = " The run in %s goes on."
	MsgUseParked     = " The changes in %s wait for your approval until you use %s again."
	MsgUnparked      = "In project %s, changes wait for your approval: reply approve or reject."
	MsgUseAlready    = "You are in project %s already."
	MsgUseQueued     = "Messages still wait to run in %s: reply use %s once they have started (status shows them), or cancel to drop them."
	MsgParkedDone    = "The run in %s left changes: they wait for your approval there. Reply use %s, then approve or reject."
	MsgBranchesOn    = "OK: from your next message on, each runs on a branch of its own (textslash/<id>, in a git worktree of the project): approve merges it, reject deletes it. Reply branches off to work in the project's checkout again."
	MsgBranchesOff   = "OK: your messages run in the project's checkout again."
	MsgBranchesUsage = "Reply branches on (each message runs on a branch of its own, merged when you approve) or branches off (they run in the project's checkout, the default)."
	// GoPrompt is the message a go sends the agent.
	GoPrompt = "The plan is approved: carry it out now."
	MsgHelp  = `Send any message and the agent works on it in your workspace.
Keywords:
status — what is happening now
cost — what your runs cost today, this week, and the last one
cancel — stop the current run and clear the queue
approve — commit the changes the agent proposed
reject — discard those changes
more — the next page of a long reply
new — start a fresh agent session
mode — ask (Claude asks before each change), auto, or plan
go — carry out the plan (in plan mode)
btw … — add a message to the run that is working
steer — on: every message sent while working is added to the run
at 6pm <task>, at tomorrow 9:00 <task>, in 2h <task>, every weekday 9am <task>, every 2h <task> — run a task later; schedules lists them, unschedule <id> ends one
tz — your time zone for schedules (tz Europe/Paris)
clone <git url> [name] — clone a repository into a new project of yours
projects — your projects: the current one, branches, changes waiting
use <name> — work in that project (use default: your first workspace)
branches — on: each message runs on a branch of its own, merged when you approve; off (the default): in the project's checkout
help — this list
When Claude asks, reply yes, no (no, <what to do instead>) or always.`
)

// kept is what of s outlasts every transition, with nothing running: the
// person's Settings, whole, and the dispatcher's bookkeeping (V, Since,
// Queued, Finished), which the machine leaves as they are. The rest of a
// UserState is the state and its job's, which each transition sets.
func kept(s contract.UserState) contract.UserState {
	return contract.UserState{V: s.V, Since: s.Since, Queued: s.Queued, Finished: s.Finished, Settings: s.Settings}
}

// working is s running the job e starts. A message's job uses up the
// request for a new session.
func working(s contract.UserState, e Effect) contract.UserState {
	n := kept(s)
	n.State, n.JobID, n.Action, n.JobNewSession, n.JobMode, n.JobProject = contract.StateWorking, e.ID, e.Action, e.NewSession, e.Mode, e.Project
	if e.Action == "" {
		n.NewSession = false
	}
	return n
}

// idle is s with nothing running.
func idle(s contract.UserState) contract.UserState {
	n := kept(s)
	n.State = contract.StateIdle
	return n
}

// InputKind says what happened.
type InputKind int

const (
	// Message: a person sent a message for the agent (ID).
	Message InputKind = iota + 1
	// Keyword: a person sent a keyword (Keyword; ID is the message's id).
	Keyword
	// Done: a run ended (ID: its job; Approval: it left changes).
	Done
	// Timeout: the approval timeout of job ID fired.
	Timeout
	// Kick: the user may be idle with messages waiting (QueueHead).
	Kick
	// Question: the running job ID asks question number Question.
	Question
)

// Input is one thing that happened to a user.
type Input struct {
	Kind    InputKind
	ID      string
	Keyword string
	// Arg is a keyword's argument; Text a message's text (for answers and
	// steering) or a question's; Media: the message has attachments; Scheduled: a task
	// the person scheduled, never an answer nor an addition to a run.
	Arg       string
	Text      string
	Media     bool
	Scheduled bool
	Approval  bool
	// Question: the question of a Question input, or of a Timeout (0:
	// the approval timeout).
	Question int
	// QueueHead is the id of the user's oldest waiting message, "" if none.
	QueueHead string
	// Exists: the project a use names is one of the person's.
	Exists bool
	// Refusal: why a clone cannot be done (a bad URL or name, a name
	// taken); empty when it can.
	Refusal string
	// Agent is what runs the person's messages (AgentClaude, …).
	Agent string
}

// EffectKind is something the dispatcher must do.
type EffectKind int

const (
	// Start publishes job ID (Action, NewSession); Dequeue: it may be the
	// queue's head, to be removed from the queue once published.
	Start EffectKind = iota + 1
	// Enqueue puts message ID in the queue; the broker may refuse (full).
	Enqueue
	// Notice sends Text to the person.
	Notice
	// ClearQueue drops every waiting message.
	ClearQueue
	// CancelRun tells the runner to stop job ID.
	CancelRun
	// ScheduleTimeout arms the approval timeout of job ID.
	ScheduleTimeout
	// CancelTimeout disarms it.
	CancelTimeout
	// ReportStatus sends the person what is happening now.
	ReportStatus
	// NextPage asks the channel for the next page of the last reply.
	NextPage
	// Answer tells the running job ID the answer (Answer, Text) to its
	// question Question.
	Answer
	// SteerRun hands Text to the running job ID.
	SteerRun
	// ReportCost sends the person what their runs cost.
	ReportCost
	// AddSchedule schedules Text, the words after Action (at or every).
	AddSchedule
	// ListSchedules sends the person their schedules.
	ListSchedules
	// RemoveSchedule removes the schedule named Text.
	RemoveSchedule
	// Admin does what an admin asked (Action: pair, people or revoke, Text
	// its argument), if the person is one.
	Admin
	// ListProjects sends the person their projects.
	ListProjects
	// TimedOut tells the person that nobody answered in time: the approval
	// request of job ID (Question 0), or its question Question. The
	// dispatcher words it, with its timeouts.
	TimedOut
)

// Effect is one thing to do.
type Effect struct {
	Kind       EffectKind
	ID         string
	Action     string // Start: "", "approve", "reject" or "go"
	NewSession bool   // Start
	Mode       string // Start: the job's permission mode ("": the default)
	Project    string // Start: the project the job runs in ("": the default)
	Dequeue    bool   // Start
	Text       string // Notice, SteerRun; Answer: what the agent is told
	Question   int    // Answer; ScheduleTimeout, CancelTimeout, TimedOut: 0 for the approval timeout
	Answer     string // Answer
}

// Step is the whole state machine.
func Step(s contract.UserState, in Input) (contract.UserState, []Effect) {
	switch in.Kind {
	case Message:
		return message(s, in)
	case Keyword:
		return keyword(s, in)
	case Done:
		return done(s, in)
	case Question:
		return question(s, in)
	case Timeout:
		if in.Question > 0 {
			return questionTimeout(s, in)
		}
		if s.State != contract.StateAwaitingApproval || s.JobID != in.ID {
			return s, nil // a timeout of an approval already answered
		}
		next, eff := startNext(idle(s), in.QueueHead)
		return next, append([]Effect{{Kind: TimedOut, ID: s.JobID}}, eff...)
	case Kick:
		if s.State == contract.StateIdle {
			return startNext(s, in.QueueHead)
		}
	}
	return s, nil
}

func message(s contract.UserState, in Input) (contract.UserState, []Effect) {
	switch {
	case s.Running() && s.JobID == in.ID:
		// The same message again: its start may have been cut short.
		return restart(s)
	case s.State == contract.StateAwaitingApproval && s.JobID == in.ID:
		return s, nil // it ran; its changes await approval
	case s.State == contract.StateAwaitingPermission && !in.Scheduled && !in.Media:
		// A voice note or a file is no answer: it waits its turn.
		return answer(s, in)
	case s.State == contract.StateWorking && s.Steer && !in.Media && !in.Scheduled && takesMessages(in.Agent):
		return s, []Effect{{Kind: SteerRun, ID: s.JobID, Text: in.Text}, {Kind: Notice, Text: MsgSteered}}
	case s.State == contract.StateIdle && in.QueueHead == "":
		e := Effect{Kind: Start, ID: in.ID, NewSession: s.NewSession, Mode: s.Mode, Project: s.Project}
		return working(s, e), []Effect{e}
	case s.State == contract.StateIdle:
		// Earlier messages wait (their start was cut short): this one goes
		// behind them, and the oldest starts.
		next, eff := startNext(s, in.QueueHead)
		return next, append([]Effect{{Kind: Enqueue, ID: in.ID}}, eff...)
	default:
		return s, []Effect{{Kind: Enqueue, ID: in.ID}}
	}
}

// asMessage is in, a keyword that turns out to be a message like any other.
func asMessage(in Input) Input {
	return Input{Kind: Message, ID: in.ID, Text: in.Text, QueueHead: in.QueueHead, Agent: in.Agent}
}

// answer is the person's answer to the question the running job waits on.
func answer(s contract.UserState, in Input) (contract.UserState, []Effect) {
	a, reason := ParseAnswer(in.Text)
	text, told := MsgAllowed, ""
	switch {
	case a == contract.AnswerAlways:
		text = MsgAlways
	case a == contract.AnswerDeny && reason == "":
		text, told = MsgDenied, "The person said no."
	case a == contract.AnswerDeny && s.Asked != "":
		text, told = MsgAnswered+s.Asked+"\nDenied, and Claude was told: "+reason, reason
	case a == contract.AnswerDeny:
		text, told = MsgDeniedReason+reason, reason
	}
	next := s
	next.State, next.Asked = contract.StateWorking, ""
	return next, []Effect{{Kind: CancelTimeout, ID: s.JobID, Question: s.Question},
		{Kind: Answer, ID: s.JobID, Question: s.Question, Answer: a, Text: told}, {Kind: Notice, Text: text}}
}

// question: the running job asks the person.
func question(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if s.State != contract.StateWorking || s.JobID != in.ID || in.Question <= s.Question {
		return s, nil // asked before, or the run is over
	}
	next := s
	next.State, next.Question = contract.StateAwaitingPermission, in.Question
	next.Asked = asked(in.Text)
	return next, []Effect{{Kind: ScheduleTimeout, ID: s.JobID, Question: in.Question}}
}

// asked is what a question asks: its text without the prompt naming the
// replies (the runner keeps questions short).
func asked(question string) string {
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(question), contract.QuestionPrompt))
}

// questionTimeout: nobody answered question in.Question of job in.ID.
func questionTimeout(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if s.State != contract.StateAwaitingPermission || s.JobID != in.ID || s.Question != in.Question {
		return s, nil // answered, or the run is over
	}
	next := s
	next.State, next.Asked = contract.StateWorking, ""
	return next, []Effect{{Kind: Answer, ID: s.JobID, Question: s.Question, Answer: contract.AnswerDeny, Text: DeniedNoAnswer},
		{Kind: TimedOut, ID: s.JobID, Question: s.Question}}
}

// keywordStep is what a keyword does to a user.
type keywordStep func(s contract.UserState, in Input) (contract.UserState, []Effect)

// keywordSteps are the keywords, each with its step.
var keywordSteps = map[string]keywordStep{
	Help:       help,
	Status:     ask(ReportStatus),
	Cost:       ask(ReportCost),
	Schedules:  ask(ListSchedules),
	More:       ask(NextPage),
	Projects:   ask(ListProjects),
	At:         askWith(AddSchedule),
	Every:      askWith(AddSchedule),
	Pair:       askWith(Admin),
	People:     askWith(Admin),
	Revoke:     askWith(Admin),
	Unschedule: unschedule,
	Zone:       zone,
	New:        newSession,
	Mode:       mode,
	Steer:      steer,
	Branches:   branches,
	Btw:        btw,
	Go:         goPlan,
	Use:        use,
	Clone:      clone,
	Cancel:     cancel,
	Approve:    approve,
	Reject:     approve,
}

func keyword(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if step, ok := keywordSteps[in.Keyword]; ok {
		return step(s, in)
	}
	return s, nil
}

// help sends the person the help for the agent here.
func help(s contract.UserState, in Input) (contract.UserState, []Effect) {
	return s, []Effect{{Kind: Notice, Text: HelpFor(in.Agent)}}
}

// ask is a keyword that asks the dispatcher for kind.
func ask(kind EffectKind) keywordStep {
	return func(s contract.UserState, _ Input) (contract.UserState, []Effect) {
		return s, []Effect{{Kind: kind}}
	}
}

// askWith is a keyword that asks the dispatcher for kind, with the
// keyword (Action) and its argument (Text).
func askWith(kind EffectKind) keywordStep {
	return func(s contract.UserState, in Input) (contract.UserState, []Effect) {
		return s, []Effect{{Kind: kind, Action: in.Keyword, Text: in.Arg}}
	}
}

func unschedule(s contract.UserState, in Input) (contract.UserState, []Effect) {
	return s, []Effect{{Kind: RemoveSchedule, Text: in.Arg}}
}

// zone sets the person's time zone for schedules.
func zone(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if _, err := time.LoadLocation(in.Arg); err != nil || in.Arg == "Local" {
		return s, []Effect{{Kind: Notice, Text: MsgZoneUsage}}
	}
	s.Zone = in.Arg
	return s, []Effect{{Kind: Notice, Text: MsgZone + in.Arg + "."}}
}

func newSession(s contract.UserState, _ Input) (contract.UserState, []Effect) {
	s.NewSession = true
	return s, []Effect{{Kind: Notice, Text: MsgNewSession}}
}

// mode sets the person's permission mode; it applies from their next run.
// The shell has none; a command agent is told it.
func mode(s contract.UserState, in Input) (contract.UserState, []Effect) {
	arg := in.Arg
	text := map[string]string{contract.ModeAuto: MsgModeAuto, contract.ModeAsk: MsgModeAsk, contract.ModePlan: MsgModePlan}[arg]
	switch {
	case in.Agent == AgentShell:
		return s, []Effect{{Kind: Notice, Text: MsgModeShell}}
	case text == "":
		return s, []Effect{{Kind: Notice, Text: MsgModeUsage}}
	case in.Agent == AgentCommand:
		text = "Mode " + arg + ": " + MsgModeCommand
	}
	s.Mode = arg
	if arg != contract.ModePlan {
		s.Usual = arg
	}
	return s, []Effect{{Kind: Notice, Text: text}}
}

// steer: "steer on" or "steer off", for an agent that takes messages
// while it works.
func steer(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if !takesMessages(in.Agent) {
		return s, []Effect{{Kind: Notice, Text: MsgSteerNone}}
	}
	eff := onOff(in.Arg, &s.Steer, MsgSteerOn, MsgSteerOff, MsgSteerUsage)
	return s, eff
}

// branches: "branches on" or "branches off".
func branches(s contract.UserState, in Input) (contract.UserState, []Effect) {
	eff := onOff(in.Arg, &s.Branches, MsgBranchesOn, MsgBranchesOff, MsgBranchesUsage)
	return s, eff
}

// onOff sets a setting of the person's, *to, as arg says (on or off) and
// tells them; any other arg leaves it and is answered with usage.
func onOff(arg string, to *bool, on, off, usage string) []Effect {
	switch arg {
	case "on":
		*to = true
		return []Effect{{Kind: Notice, Text: on}}
	case "off":
		*to = false
		return []Effect{{Kind: Notice, Text: off}}
	}
	return []Effect{{Kind: Notice, Text: usage}}
}

// btw adds its text to the running job, if its agent takes messages
// while it works; otherwise the text waits its turn, and the person is
// told.
func btw(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if s.Running() && takesMessages(in.Agent) {
		return s, []Effect{{Kind: SteerRun, ID: s.JobID, Text: in.Arg}, {Kind: Notice, Text: MsgSteered}}
	}
	if s.Running() {
		next, eff := message(s, asMessage(in))
		return next, append([]Effect{{Kind: Notice, Text: MsgNoSteer}}, eff...)
	}
	// Nothing to add it to: it is a message like any other.
	return message(s, asMessage(in))
}

// goPlan carries out the plan just made, for a person in plan mode.
func goPlan(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if s.Mode != contract.ModePlan || in.Agent == AgentShell {
		return message(s, asMessage(in))
	}
	switch {
	case s.Running() && s.JobID == in.ID:
		return restart(s)
	case s.State != contract.StateIdle:
		return s, []Effect{{Kind: Notice, Text: MsgGoWorking}}
	}
	// The plan's session goes on, whatever new said.
	e := Effect{Kind: Start, ID: in.ID, Action: Go, Mode: s.Usual, Project: s.Project}
	return working(s, e), []Effect{e}
}

// cancel stops the run and clears the queue, or ends the wait for an
// approval (the changes stay).
func cancel(s contract.UserState, _ Input) (contract.UserState, []Effect) {
	switch s.State {
	case contract.StateWorking:
		return idle(s), []Effect{
			{Kind: CancelRun, ID: s.JobID}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelled}}
	case contract.StateAwaitingPermission:
		return idle(s), []Effect{{Kind: CancelTimeout, ID: s.JobID, Question: s.Question},
			{Kind: CancelRun, ID: s.JobID}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelled}}
	case contract.StateAwaitingApproval:
		return idle(s), []Effect{
			{Kind: CancelTimeout, ID: s.JobID}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelledKept}}
	}
	return s, []Effect{{Kind: Notice, Text: MsgNothingToStop}}
}

// approve answers an approval request: approve or reject.
func approve(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if s.Running() && s.JobID == in.ID {
		return restart(s) // the same answer again: its start may have been cut short
	}
	switch s.State {
	case contract.StateAwaitingApproval:
		text, action := MsgApproving, Approve
		if in.Keyword == Reject {
			text, action = MsgRejecting, Reject
		}
		e := Effect{Kind: Start, ID: in.ID, Action: action, Project: s.Project}
		return working(s, e), []Effect{{Kind: CancelTimeout, ID: s.JobID}, {Kind: Notice, Text: text}, e}
	case contract.StateWorking:
		return s, []Effect{{Kind: Notice, Text: MsgStillWorking}}
	case contract.StateAwaitingPermission:
		return s, []Effect{{Kind: Notice, Text: MsgAnswerFirst}}
	}
	return s, []Effect{{Kind: Notice, Text: MsgNoApproval}}
}

func done(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if !s.Running() || s.JobID != in.ID {
		if s.Running() {
			// The run that ended is not the current one: the current one's
			// start may have been cut short after the state changed.
			return restart(s)
		}
		return s, nil
	}
	var eff []Effect
	if s.State == contract.StateAwaitingPermission {
		// The run ended while it asked (cancelled, or its runner died).
		eff = append(eff, Effect{Kind: CancelTimeout, ID: s.JobID, Question: s.Question})
	}
	if in.Approval && s.JobProject == s.Project {
		next := kept(s)
		next.State, next.JobID = contract.StateAwaitingApproval, s.JobID
		return next, append(eff, Effect{Kind: ScheduleTimeout, ID: s.JobID})
	}
	next := idle(s)
	if in.Approval {
		// The person moved to another project while it ran: the changes
		// wait in theirs, and the current project goes on.
		from := contract.ProjectOf(s.JobProject)
		next.Parked = parked(next.Parked, from, s.JobID)
		eff = append(eff, Effect{Kind: Notice, Text: fmt.Sprintf(MsgParkedDone, from, from)})
	}
	next, more := settle(next, in.QueueHead)
	return next, append(eff, more...)
}

// clone makes a job of its own, in its turn; never an answer nor an
// addition to the run.
func clone(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if in.Refusal != "" {
		return s, []Effect{{Kind: Notice, Text: in.Refusal}}
	}
	m := asMessage(in)
	m.Scheduled = true
	return message(s, m)
}

// use switches the person to the project in.Arg, when it is one of
// theirs; otherwise "use …" is a message like any other. The changes
// awaiting approval in the project left wait there (parked), and those
// of the project entered come back.
func use(s contract.UserState, in Input) (contract.UserState, []Effect) {
	if !in.Exists {
		return message(s, asMessage(in))
	}
	to := in.Arg
	if to == contract.DefaultProject {
		to = ""
	}
	from := contract.ProjectOf(s.Project)
	notice := func(text string) []Effect { return []Effect{{Kind: Notice, Text: text}} }
	switch {
	case to == s.Project:
		return s, notice(fmt.Sprintf(MsgUseAlready, from))
	case s.State == contract.StateAwaitingPermission:
		return s, notice(MsgAnswerFirst)
	case in.QueueHead != "" && in.QueueHead != s.JobID:
		// Waiting messages run where the person was when they sent them.
		return s, notice(fmt.Sprintf(MsgUseQueued, from, in.Arg))
	}
	next := s
	text := fmt.Sprintf(MsgUse, contract.ProjectOf(to))
	var eff []Effect
	switch s.State {
	case contract.StateAwaitingApproval:
		next = idle(s)
		next.Parked = parked(next.Parked, from, s.JobID)
		eff = append(eff, Effect{Kind: CancelTimeout, ID: s.JobID})
		text += fmt.Sprintf(MsgUseParked, from, from)
	case contract.StateWorking:
		text += fmt.Sprintf(MsgUseRunning, from)
	}
	// A new session asked for applies where it was asked.
	next.Project, next.NewSession = to, false
	eff = append(eff, Effect{Kind: Notice, Text: text})
	if next.State == contract.StateIdle {
		var more []Effect
		next, more = settle(next, "")
		eff = append(eff, more...)
	}
	return next, eff
}

// settle readies an idle user: the changes parked in the current project
// await approval again, or the oldest waiting message starts.
func settle(s contract.UserState, head string) (contract.UserState, []Effect) {
	name := contract.ProjectOf(s.Project)
	job := s.Parked[name]
	if job == "" {
		return startNext(s, head)
	}
	next := idle(s)
	next.Parked = parked(s.Parked, name, "")
	next.State, next.JobID = contract.StateAwaitingApproval, job
	return next, []Effect{{Kind: ScheduleTimeout, ID: job}, {Kind: Notice, Text: fmt.Sprintf(MsgUnparked, name)}}
}

// restart repeats the start of the running job exactly. Starting is
// idempotent (the broker drops a second copy), so this only matters when
// the first start was cut short.
func restart(s contract.UserState) (contract.UserState, []Effect) {
	return s, []Effect{{Kind: Start, ID: s.JobID, Action: s.Action, NewSession: s.JobNewSession, Mode: s.JobMode,
		Project: s.JobProject, Dequeue: s.Action == ""}}
}

// startNext starts the oldest waiting message of an idle user, if any.
func startNext(s contract.UserState, head string) (contract.UserState, []Effect) {
	if head == "" {
		return idle(s), nil
	}
	e := Effect{Kind: Start, ID: head, Dequeue: true, NewSession: s.NewSession, Mode: s.Mode, Project: s.Project}
	return working(s, e), []Effect{e}
}

// parked is p, the jobs parked by project (contract.UserState.Parked),
// with job parked in project (none when job is ""). It is a new map, nil
// when empty: p may be shared with the state the step started from.
func parked(p map[string]string, project, job string) map[string]string {
	out := maps.Clone(p)
	delete(out, project)
	if job != "" {
		if out == nil {
			out = map[string]string{}
		}
		out[project] = job
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
