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
//
// The person's contract.Settings outlast every transition and travel whole
// (kept). Its files: fsm.go the inputs, effects, Step and a run's life;
// keywords.go the keywords and their table; settings.go the keywords that
// change Settings; questions.go permission questions and their answers;
// projects.go use and clone; schedule.go and when.go scheduled messages;
// agent.go what differs by agent; texts.go what the person is told.
package fsm

import (
	"fmt"
	"slices"
	"time"

	"github.com/textslash/textslash/contract"
)

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
	// Waiting: a cancel's, how many messages wait in the queue it drops.
	Waiting int
	// Exists: the project a use names is one of the person's.
	Exists bool
	// Refusal: why a clone cannot be done (a bad URL or name, a name
	// taken); empty when it can.
	Refusal string
	// Agent is what runs the person's messages (AgentClaude, …).
	Agent string
	// WarmUntil: a Done's, until when the person's home stays warm (zero:
	// not kept).
	WarmUntil time.Time
	// Background: a Done's, what the home keeps running.
	Background []contract.Background
	// Sandbox: a Done's, what the person's sandbox lacks.
	Sandbox string
	// InSeq: a Message's or Keyword's sequence in IN (0: not from IN, a
	// scheduled message). The machine does not look at it: the
	// dispatcher keeps UserState.InSeq by it.
	InSeq uint64
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

// kept is what of s outlasts every transition, with nothing running: the
// person's Settings, whole, the dispatcher's bookkeeping (V, Since,
// Queued, Finished, InSeq), which the machine leaves as they are, and WarmUntil,
// Background and Sandbox, which only a done changes (warmed). The rest of a UserState is the state
// and its job's, which each transition sets.
func kept(s contract.UserState) contract.UserState {
	return contract.UserState{V: s.V, Since: s.Since, Queued: s.Queued, Finished: s.Finished, InSeq: s.InSeq,
		WarmUntil: s.WarmUntil, Background: s.Background, Sandbox: s.Sandbox, Settings: s.Settings}
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

// cancel stops the run and clears the queue, or ends the wait for an
// approval (the changes stay).
func cancel(s contract.UserState, in Input) (contract.UserState, []Effect) {
	switch s.State {
	case contract.StateWorking:
		return idle(s), []Effect{
			{Kind: CancelRun, ID: s.JobID}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelled + dropped(in.Waiting)}}
	case contract.StateAwaitingPermission:
		return idle(s), []Effect{{Kind: CancelTimeout, ID: s.JobID, Question: s.Question},
			{Kind: CancelRun, ID: s.JobID}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelled + dropped(in.Waiting)}}
	case contract.StateAwaitingApproval:
		return idle(s), []Effect{
			{Kind: CancelTimeout, ID: s.JobID}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelledKept + dropped(in.Waiting)}}
	}
	return s, []Effect{{Kind: Notice, Text: MsgNothingToStop}}
}

// dropped is what a cancel adds about the n waiting messages it dropped.
func dropped(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return " " + MsgDroppedOne
	}
	return " " + fmt.Sprintf(MsgDropped, n)
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
	s = warmed(s, in)
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

// warmed is s told by the done of job in.ID until when the person's home
// stays warm: the newest run's end says so, whether it is the running
// job's, the one just cancelled (the last finished), or one the state
// never knew. A done redelivered after a later run ended is old news.
func warmed(s contract.UserState, in Input) contract.UserState {
	if i := slices.Index(s.Finished, in.ID); i >= 0 && i < len(s.Finished)-1 {
		return s
	}
	s.WarmUntil, s.Background, s.Sandbox = in.WarmUntil, in.Background, in.Sandbox
	return s
}
