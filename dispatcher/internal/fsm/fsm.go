// Package fsm is the per-user state machine of the dispatcher, without any
// I/O: given a user's state and one input it returns the next state and
// the effects the dispatcher must carry out, in order.
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
	"slices"
	"strings"
	"time"
)

// States.
const (
	Idle             = "idle"
	Working          = "working"
	AwaitingApproval = "awaiting_approval"
	// AwaitingPermission: the running job waits for the person's answer
	// to a question (Snapshot.Question).
	AwaitingPermission = "awaiting_permission"
)

// running reports whether a job runs in state (it may be waiting for an
// answer).
func running(state string) bool { return state == Working || state == AwaitingPermission }

// Permission modes (contract.ModeAuto, ModeAsk, ModePlan).
const (
	ModeAuto = "auto"
	ModeAsk  = "ask"
	ModePlan = "plan"
)

// Answers to a question (contract.AnswerAllow, AnswerAlways, AnswerDeny).
const (
	AnswerAllow  = "allow"
	AnswerAlways = "always"
	AnswerDeny   = "deny"
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
	// Scheduled messages: "at 18:00 run the tests", "every weekday 9:00
	// summarize open PRs", "schedules", "unschedule 3f2a9c", "tz Europe/Paris".
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

// DefaultProject names the workspace every person starts with
// (contract.DefaultProject); snapshots write it as "".
const DefaultProject = "default"

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
			return AnswerAllow, ""
		}
	case "always":
		if rest == "" {
			return AnswerAlways, ""
		}
	case "no", "n", "deny", "nope":
		return AnswerDeny, rest
	}
	return AnswerDeny, t
}

// Texts the dispatcher sends on its own.
const (
	MsgQueued        = "Got it, I'll process this next."
	MsgQueueFull     = "Queue full, please wait for current tasks to finish."
	MsgEmpty         = "I received an empty message."
	MsgCancelled     = "Cancelled. Nothing is running now."
	MsgCancelledKept = "Cancelled. The changes stay in your workspace, uncommitted."
	MsgNothingToStop = "Nothing is running, so there is nothing to cancel."
	MsgNoApproval    = "Nothing is waiting for your approval."
	MsgStillWorking  = "Nothing is waiting for your approval yet: the agent is still working. Reply cancel to stop it."
	MsgApproving     = "Approved. Committing the changes…"
	MsgRejecting     = "Rejected. Discarding the changes…"
	MsgTimedOut      = "No answer to the approval request in time, so I stopped waiting. The changes stay in your workspace, uncommitted."
	MsgNewSession    = "OK: your next message starts a new session."
	MsgAllowed       = "Allowed. Claude goes on."
	MsgAlways        = "Allowed, and I won't ask again for that in this session."
	MsgDenied        = "Denied. Claude was told no."
	MsgDeniedReason  = "Denied. Claude was told: "
	MsgAnswerFirst   = "Claude is waiting for your answer to its question: reply yes, no or always (or cancel)."
	// MsgQuestionTimedOut is reworded by the dispatcher with its timeout.
	MsgQuestionTimedOut = "No answer in time, so Claude was told no."
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
  status   what is happening now
  cost     what your runs cost today, this week, and the last one
  cancel   stop the current run and clear the queue
  approve  commit the changes the agent proposed
  reject   discard those changes
  more     the next page of a long reply
  new      start a fresh agent session
  mode     ask (Claude asks before each change), auto, or plan
  go       carry out the plan (in plan mode)
  btw …    add a message to the run that is working
  steer    on: every message sent while working is added to the run
  at 18:00 <task>, every weekday 9:00 <task>, every 2h <task>
           run a task later; schedules lists them, unschedule <id> ends one
  tz       your time zone for schedules (tz Europe/Paris)
  clone <git url> [name]
           clone a repository into a new project of yours
  projects your projects: the current one, branches, changes waiting
  use <name>
           work in that project (use default: your first workspace)
  branches on: each message runs on a branch of its own, merged when
           you approve; off (the default): in the project's checkout
  help     this list
When Claude asks, reply yes, no (no, <what to do instead>) or always.`
)

// Snapshot is one user's state.
type Snapshot struct {
	State string
	// Job is the running job (working) or the one whose changes await
	// approval (awaiting_approval).
	Job string
	// NewSession: the next job starts a fresh agent session.
	NewSession bool
	// Action and JobNewSession are how Job was started (while working), so
	// that a start cut short by a crash is repeated exactly.
	Action        string
	JobNewSession bool
	JobMode       string
	// Question is the running job's last question: the one awaiting an
	// answer (awaiting_permission), or the last one answered (working).
	Question int
	// The person's settings: their permission mode, the mode go carries a
	// plan out in, and whether messages sent while working steer the run.
	Mode  string
	Usual string
	Steer bool
	// Zone is the person's time zone for schedules ("" : the server's).
	Zone string
	// Project is the person's current project ("": the default), where
	// their messages run; JobProject is the running job's.
	Project    string
	JobProject string
	// Parked are the jobs whose changes await approval in projects other
	// than the current one.
	Parked Parked
	// Branches: each message runs on a branch of its own.
	Branches bool
}

// settings is s's person settings alone: what survives every transition.
func (s Snapshot) settings() Snapshot {
	return Snapshot{NewSession: s.NewSession, Mode: s.Mode, Usual: s.Usual, Steer: s.Steer, Zone: s.Zone,
		Project: s.Project, Parked: s.Parked, Branches: s.Branches}
}

// working is s running the job e starts. A message's job uses up the
// request for a new session.
func (s Snapshot) working(e Effect) Snapshot {
	n := s.settings()
	n.State, n.Job, n.Action, n.JobNewSession, n.JobMode, n.JobProject = Working, e.ID, e.Action, e.NewSession, e.Mode, e.Project
	if e.Action == "" {
		n.NewSession = false
	}
	return n
}

// idle is s with nothing running.
func (s Snapshot) idle() Snapshot {
	n := s.settings()
	n.State = Idle
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
	// steering); Media: the message has attachments; Scheduled: a task
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
	Question   int    // Answer; ScheduleTimeout, CancelTimeout: 0 for the approval timeout
	Answer     string // Answer
}

// Step is the whole state machine.
func Step(s Snapshot, in Input) (Snapshot, []Effect) {
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
		if s.State != AwaitingApproval || s.Job != in.ID {
			return s, nil // a timeout of an approval already answered
		}
		next, eff := startNext(s.idle(), in.QueueHead)
		return next, append([]Effect{{Kind: Notice, Text: MsgTimedOut}}, eff...)
	case Kick:
		if s.State == Idle {
			return startNext(s, in.QueueHead)
		}
	}
	return s, nil
}

func message(s Snapshot, in Input) (Snapshot, []Effect) {
	switch {
	case running(s.State) && s.Job == in.ID:
		// The same message again: its start may have been cut short.
		return restart(s)
	case s.State == AwaitingApproval && s.Job == in.ID:
		return s, nil // it ran; its changes await approval
	case s.State == AwaitingPermission && !in.Scheduled && !in.Media:
		// A voice note or a file is no answer: it waits its turn.
		return answer(s, in)
	case s.State == Working && s.Steer && !in.Media && !in.Scheduled:
		return s, []Effect{{Kind: SteerRun, ID: s.Job, Text: in.Text}, {Kind: Notice, Text: MsgSteered}}
	case s.State == Idle && in.QueueHead == "":
		e := Effect{Kind: Start, ID: in.ID, NewSession: s.NewSession, Mode: s.Mode, Project: s.Project}
		return s.working(e), []Effect{e}
	case s.State == Idle:
		// Earlier messages wait (their start was cut short): this one goes
		// behind them, and the oldest starts.
		next, eff := startNext(s, in.QueueHead)
		return next, append([]Effect{{Kind: Enqueue, ID: in.ID}}, eff...)
	default:
		return s, []Effect{{Kind: Enqueue, ID: in.ID}}
	}
}

// answer is the person's answer to the question the running job waits on.
func answer(s Snapshot, in Input) (Snapshot, []Effect) {
	a, reason := ParseAnswer(in.Text)
	text, told := MsgAllowed, ""
	switch {
	case a == AnswerAlways:
		text = MsgAlways
	case a == AnswerDeny && reason == "":
		text, told = MsgDenied, "The person said no."
	case a == AnswerDeny:
		text, told = MsgDeniedReason+reason, reason
	}
	next := s
	next.State = Working
	return next, []Effect{{Kind: CancelTimeout, ID: s.Job, Question: s.Question},
		{Kind: Answer, ID: s.Job, Question: s.Question, Answer: a, Text: told}, {Kind: Notice, Text: text}}
}

// question: the running job asks the person.
func question(s Snapshot, in Input) (Snapshot, []Effect) {
	if s.State != Working || s.Job != in.ID || in.Question <= s.Question {
		return s, nil // asked before, or the run is over
	}
	next := s
	next.State, next.Question = AwaitingPermission, in.Question
	return next, []Effect{{Kind: ScheduleTimeout, ID: s.Job, Question: in.Question}}
}

// questionTimeout: nobody answered question in.Question of job in.ID.
func questionTimeout(s Snapshot, in Input) (Snapshot, []Effect) {
	if s.State != AwaitingPermission || s.Job != in.ID || s.Question != in.Question {
		return s, nil // answered, or the run is over
	}
	next := s
	next.State = Working
	return next, []Effect{{Kind: Answer, ID: s.Job, Question: s.Question, Answer: AnswerDeny, Text: DeniedNoAnswer},
		{Kind: Notice, Text: MsgQuestionTimedOut}}
}

func keyword(s Snapshot, in Input) (Snapshot, []Effect) {
	switch in.Keyword {
	case Help:
		return s, []Effect{{Kind: Notice, Text: MsgHelp}}
	case Status:
		return s, []Effect{{Kind: ReportStatus}}
	case Cost:
		return s, []Effect{{Kind: ReportCost}}
	case At, Every:
		return s, []Effect{{Kind: AddSchedule, Action: in.Keyword, Text: in.Arg}}
	case Schedules:
		return s, []Effect{{Kind: ListSchedules}}
	case Pair, People, Revoke:
		return s, []Effect{{Kind: Admin, Action: in.Keyword, Text: in.Arg}}
	case Unschedule:
		return s, []Effect{{Kind: RemoveSchedule, Text: in.Arg}}
	case Projects, Use, Clone, Branches:
		return projectKeyword(s, in)
	case Zone:
		if _, err := time.LoadLocation(in.Arg); err != nil || in.Arg == "Local" {
			return s, []Effect{{Kind: Notice, Text: MsgZoneUsage}}
		}
		s.Zone = in.Arg
		return s, []Effect{{Kind: Notice, Text: MsgZone + in.Arg + "."}}
	case More:
		return s, []Effect{{Kind: NextPage}}
	case New:
		s.NewSession = true
		return s, []Effect{{Kind: Notice, Text: MsgNewSession}}
	case Mode:
		return mode(s, in.Arg)
	case Steer:
		switch in.Arg {
		case "on":
			s.Steer = true
			return s, []Effect{{Kind: Notice, Text: MsgSteerOn}}
		case "off":
			s.Steer = false
			return s, []Effect{{Kind: Notice, Text: MsgSteerOff}}
		}
		return s, []Effect{{Kind: Notice, Text: MsgSteerUsage}}
	case Btw:
		if running(s.State) {
			return s, []Effect{{Kind: SteerRun, ID: s.Job, Text: in.Arg}, {Kind: Notice, Text: MsgSteered}}
		}
		// Nothing to add it to: it is a message like any other.
		return message(s, Input{Kind: Message, ID: in.ID, Text: in.Text, QueueHead: in.QueueHead})
	case Go:
		if s.Mode != ModePlan {
			return message(s, Input{Kind: Message, ID: in.ID, Text: in.Text, QueueHead: in.QueueHead})
		}
		switch {
		case running(s.State) && s.Job == in.ID:
			return restart(s)
		case s.State != Idle:
			return s, []Effect{{Kind: Notice, Text: MsgGoWorking}}
		}
		// The plan's session goes on, whatever new said.
		e := Effect{Kind: Start, ID: in.ID, Action: Go, Mode: s.Usual, Project: s.Project}
		return s.working(e), []Effect{e}
	case Cancel:
		switch s.State {
		case Working:
			return s.idle(), []Effect{
				{Kind: CancelRun, ID: s.Job}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelled}}
		case AwaitingPermission:
			return s.idle(), []Effect{{Kind: CancelTimeout, ID: s.Job, Question: s.Question},
				{Kind: CancelRun, ID: s.Job}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelled}}
		case AwaitingApproval:
			return s.idle(), []Effect{
				{Kind: CancelTimeout, ID: s.Job}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelledKept}}
		}
		return s, []Effect{{Kind: Notice, Text: MsgNothingToStop}}
	case Approve, Reject:
		if running(s.State) && s.Job == in.ID {
			return restart(s) // the same answer again: its start may have been cut short
		}
		switch s.State {
		case AwaitingApproval:
			text, action := MsgApproving, Approve
			if in.Keyword == Reject {
				text, action = MsgRejecting, Reject
			}
			e := Effect{Kind: Start, ID: in.ID, Action: action, Project: s.Project}
			return s.working(e), []Effect{{Kind: CancelTimeout, ID: s.Job}, {Kind: Notice, Text: text}, e}
		case Working:
			return s, []Effect{{Kind: Notice, Text: MsgStillWorking}}
		case AwaitingPermission:
			return s, []Effect{{Kind: Notice, Text: MsgAnswerFirst}}
		}
		return s, []Effect{{Kind: Notice, Text: MsgNoApproval}}
	}
	return s, nil
}

// mode sets the person's permission mode; it applies from their next run.
func mode(s Snapshot, arg string) (Snapshot, []Effect) {
	text := map[string]string{ModeAuto: MsgModeAuto, ModeAsk: MsgModeAsk, ModePlan: MsgModePlan}[arg]
	if text == "" {
		return s, []Effect{{Kind: Notice, Text: MsgModeUsage}}
	}
	s.Mode = arg
	if arg != ModePlan {
		s.Usual = arg
	}
	return s, []Effect{{Kind: Notice, Text: text}}
}

func done(s Snapshot, in Input) (Snapshot, []Effect) {
	if !running(s.State) || s.Job != in.ID {
		if running(s.State) {
			// The run that ended is not the current one: the current one's
			// start may have been cut short after the state changed.
			return restart(s)
		}
		return s, nil
	}
	var eff []Effect
	if s.State == AwaitingPermission {
		// The run ended while it asked (cancelled, or its runner died).
		eff = append(eff, Effect{Kind: CancelTimeout, ID: s.Job, Question: s.Question})
	}
	if in.Approval && s.JobProject == s.Project {
		next := s.settings()
		next.State, next.Job = AwaitingApproval, s.Job
		return next, append(eff, Effect{Kind: ScheduleTimeout, ID: s.Job})
	}
	next := s.idle()
	if in.Approval {
		// The person moved to another project while it ran: the changes
		// wait in theirs, and the current project goes on.
		from := ProjectName(s.JobProject)
		next.Parked = next.Parked.With(from, s.Job)
		eff = append(eff, Effect{Kind: Notice, Text: fmt.Sprintf(MsgParkedDone, from, from)})
	}
	next, more := settle(next, in.QueueHead)
	return next, append(eff, more...)
}

// ProjectName is how a project is shown: its name, or DefaultProject.
func ProjectName(p string) string {
	if p == "" {
		return DefaultProject
	}
	return p
}

// projectKeyword: projects, use, clone and branches.
func projectKeyword(s Snapshot, in Input) (Snapshot, []Effect) {
	switch in.Keyword {
	case Projects:
		return s, []Effect{{Kind: ListProjects}}
	case Use:
		return use(s, in)
	case Clone:
		if in.Refusal != "" {
			return s, []Effect{{Kind: Notice, Text: in.Refusal}}
		}
		// A job of its own, in its turn; never an answer nor an addition
		// to the run.
		return message(s, Input{Kind: Message, ID: in.ID, Text: in.Text, QueueHead: in.QueueHead, Scheduled: true})
	}
	switch in.Arg { // branches
	case "on":
		s.Branches = true
		return s, []Effect{{Kind: Notice, Text: MsgBranchesOn}}
	case "off":
		s.Branches = false
		return s, []Effect{{Kind: Notice, Text: MsgBranchesOff}}
	}
	return s, []Effect{{Kind: Notice, Text: MsgBranchesUsage}}
}

// use switches the person to the project in.Arg, when it is one of
// theirs; otherwise "use …" is a message like any other. The changes
// awaiting approval in the project left wait there (parked), and those
// of the project entered come back.
func use(s Snapshot, in Input) (Snapshot, []Effect) {
	if !in.Exists {
		return message(s, Input{Kind: Message, ID: in.ID, Text: in.Text, QueueHead: in.QueueHead})
	}
	to := in.Arg
	if to == DefaultProject {
		to = ""
	}
	from := ProjectName(s.Project)
	notice := func(text string) []Effect { return []Effect{{Kind: Notice, Text: text}} }
	switch {
	case to == s.Project:
		return s, notice(fmt.Sprintf(MsgUseAlready, from))
	case s.State == AwaitingPermission:
		return s, notice(MsgAnswerFirst)
	case in.QueueHead != "" && in.QueueHead != s.Job:
		// Waiting messages run where the person was when they sent them.
		return s, notice(fmt.Sprintf(MsgUseQueued, from, in.Arg))
	}
	next := s
	text := fmt.Sprintf(MsgUse, ProjectName(to))
	var eff []Effect
	switch s.State {
	case AwaitingApproval:
		next = s.idle()
		next.Parked = next.Parked.With(from, s.Job)
		eff = append(eff, Effect{Kind: CancelTimeout, ID: s.Job})
		text += fmt.Sprintf(MsgUseParked, from, from)
	case Working:
		text += fmt.Sprintf(MsgUseRunning, from)
	}
	// A new session asked for applies where it was asked.
	next.Project, next.NewSession = to, false
	eff = append(eff, Effect{Kind: Notice, Text: text})
	if next.State == Idle {
		var more []Effect
		next, more = settle(next, "")
		eff = append(eff, more...)
	}
	return next, eff
}

// settle readies an idle user: the changes parked in the current project
// await approval again, or the oldest waiting message starts.
func settle(s Snapshot, head string) (Snapshot, []Effect) {
	name := ProjectName(s.Project)
	job := s.Parked.Get(name)
	if job == "" {
		return startNext(s, head)
	}
	next := s.idle()
	next.Parked = s.Parked.With(name, "")
	next.State, next.Job = AwaitingApproval, job
	return next, []Effect{{Kind: ScheduleTimeout, ID: job}, {Kind: Notice, Text: fmt.Sprintf(MsgUnparked, name)}}
}

// restart repeats the start of the running job exactly. Starting is
// idempotent (the broker drops a second copy), so this only matters when
// the first start was cut short.
func restart(s Snapshot) (Snapshot, []Effect) {
	return s, []Effect{{Kind: Start, ID: s.Job, Action: s.Action, NewSession: s.JobNewSession, Mode: s.JobMode,
		Project: s.JobProject, Dequeue: s.Action == ""}}
}

// startNext starts the oldest waiting message of an idle user, if any.
func startNext(s Snapshot, head string) (Snapshot, []Effect) {
	if head == "" {
		return s.idle(), nil
	}
	e := Effect{Kind: Start, ID: head, Dequeue: true, NewSession: s.NewSession, Mode: s.Mode, Project: s.Project}
	return s.working(e), []Effect{e}
}

// Parked maps projects to the job whose changes await approval there,
// written "project=job" and sorted, separated by spaces: a string, so that
// snapshots stay comparable.
type Parked string

// Get is the job parked in project, or "".
func (p Parked) Get(project string) string {
	for _, f := range strings.Fields(string(p)) {
		if k, v, _ := strings.Cut(f, "="); k == project {
			return v
		}
	}
	return ""
}

// With is p with job parked in project (none when job is "").
func (p Parked) With(project, job string) Parked {
	var out []string
	for _, f := range strings.Fields(string(p)) {
		if k, _, _ := strings.Cut(f, "="); k != project {
			out = append(out, f)
		}
	}
	if job != "" {
		out = append(out, project+"="+job)
	}
	slices.Sort(out)
	return Parked(strings.Join(out, " "))
}

// Map is p as a map, project → job.
func (p Parked) Map() map[string]string {
	if p == "" {
		return nil
	}
	m := map[string]string{}
	for _, f := range strings.Fields(string(p)) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

// ParkedOf is m as a Parked.
func ParkedOf(m map[string]string) Parked {
	var p Parked
	for k, v := range m {
		p = p.With(k, v)
	}
	return p
}
