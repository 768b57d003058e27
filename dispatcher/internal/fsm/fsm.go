// Package fsm is the per-user state machine of the dispatcher, without any
// I/O: given a user's state and one input it returns the next state and
// the effects the dispatcher must carry out, in order.
//
//	idle ──message──▶ working ──done──▶ idle (or the next queued message)
//	                     │ done with changes
//	                     ▼
//	            awaiting_approval ──approve/reject──▶ working (commit or revert)
//	                     └──cancel / timeout──▶ idle (changes stay on disk)
package fsm

import (
	"slices"
	"strings"
)

// States.
const (
	Idle             = "idle"
	Working          = "working"
	AwaitingApproval = "awaiting_approval"
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
)

var keywords = []string{Cancel, Approve, Reject, Status, More, New, Help}

// ParseKeyword reports whether text, as a whole, is a keyword.
func ParseKeyword(text string) (string, bool) {
	k := strings.ToLower(strings.TrimSpace(text))
	if slices.Contains(keywords, k) {
		return k, true
	}
	return "", false
}

// Texts the dispatcher sends on its own.
const (
	MsgQueued        = "Got it, I'll process this next."
	MsgQueueFull     = "Queue full, please wait for current tasks to finish."
	MsgEmpty         = "I received an empty message."
	MsgUnreadable    = "I can't read that kind of file yet: send text, or images (JPEG or PNG)."
	MsgCancelled     = "Cancelled. Nothing is running now."
	MsgCancelledKept = "Cancelled. The changes stay in your workspace, uncommitted."
	MsgNothingToStop = "Nothing is running, so there is nothing to cancel."
	MsgNoApproval    = "Nothing is waiting for your approval."
	MsgStillWorking  = "Nothing is waiting for your approval yet: the agent is still working. Reply cancel to stop it."
	MsgApproving     = "Approved. Committing the changes…"
	MsgRejecting     = "Rejected. Discarding the changes…"
	MsgTimedOut      = "No answer to the approval request in time, so I stopped waiting. The changes stay in your workspace, uncommitted."
	MsgNewSession    = "OK: your next message starts a new session."
	MsgHelp          = `Send any message and the agent works on it in your workspace.
Keywords:
  status   what is happening now
  cancel   stop the current run and clear the queue
  approve  commit the changes the agent proposed
  reject   discard those changes
  more     the next page of a long reply
  new      start a fresh agent session
  help     this list`
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
)

// Input is one thing that happened to a user.
type Input struct {
	Kind     InputKind
	ID       string
	Keyword  string
	Approval bool
	// QueueHead is the id of the user's oldest waiting message, "" if none.
	QueueHead string
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
)

// Effect is one thing to do.
type Effect struct {
	Kind       EffectKind
	ID         string
	Action     string // Start: "", "approve" or "reject"
	NewSession bool   // Start
	Dequeue    bool   // Start
	Text       string // Notice
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
	case Timeout:
		if s.State != AwaitingApproval || s.Job != in.ID {
			return s, nil // a timeout of an approval already answered
		}
		next, eff := startNext(Snapshot{State: Idle, NewSession: s.NewSession}, in.QueueHead)
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
	case s.State == Working && s.Job == in.ID:
		// The same message again: its start may have been cut short.
		return restart(s)
	case s.State == AwaitingApproval && s.Job == in.ID:
		return s, nil // it ran; its changes await approval
	case s.State == Idle && in.QueueHead == "":
		return Snapshot{State: Working, Job: in.ID, JobNewSession: s.NewSession},
			[]Effect{{Kind: Start, ID: in.ID, NewSession: s.NewSession}}
	case s.State == Idle:
		// Earlier messages wait (their start was cut short): this one goes
		// behind them, and the oldest starts.
		next, eff := startNext(s, in.QueueHead)
		return next, append([]Effect{{Kind: Enqueue, ID: in.ID}}, eff...)
	default:
		return s, []Effect{{Kind: Enqueue, ID: in.ID}}
	}
}

func keyword(s Snapshot, in Input) (Snapshot, []Effect) {
	switch in.Keyword {
	case Help:
		return s, []Effect{{Kind: Notice, Text: MsgHelp}}
	case Status:
		return s, []Effect{{Kind: ReportStatus}}
	case More:
		return s, []Effect{{Kind: NextPage}}
	case New:
		s.NewSession = true
		return s, []Effect{{Kind: Notice, Text: MsgNewSession}}
	case Cancel:
		switch s.State {
		case Working:
			return Snapshot{State: Idle, NewSession: s.NewSession}, []Effect{
				{Kind: CancelRun, ID: s.Job}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelled}}
		case AwaitingApproval:
			return Snapshot{State: Idle, NewSession: s.NewSession}, []Effect{
				{Kind: CancelTimeout, ID: s.Job}, {Kind: ClearQueue}, {Kind: Notice, Text: MsgCancelledKept}}
		}
		return s, []Effect{{Kind: Notice, Text: MsgNothingToStop}}
	case Approve, Reject:
		if s.State == Working && s.Job == in.ID {
			return restart(s) // the same answer again: its start may have been cut short
		}
		switch s.State {
		case AwaitingApproval:
			text, action := MsgApproving, Approve
			if in.Keyword == Reject {
				text, action = MsgRejecting, Reject
			}
			return Snapshot{State: Working, Job: in.ID, NewSession: s.NewSession, Action: action}, []Effect{
				{Kind: CancelTimeout, ID: s.Job}, {Kind: Notice, Text: text},
				{Kind: Start, ID: in.ID, Action: action}}
		case Working:
			return s, []Effect{{Kind: Notice, Text: MsgStillWorking}}
		}
		return s, []Effect{{Kind: Notice, Text: MsgNoApproval}}
	}
	return s, nil
}

func done(s Snapshot, in Input) (Snapshot, []Effect) {
	if s.State != Working || s.Job != in.ID {
		if s.State == Working {
			// The run that ended is not the current one: the current one's
			// start may have been cut short after the state changed.
			return restart(s)
		}
		return s, nil
	}
	if in.Approval {
		return Snapshot{State: AwaitingApproval, Job: s.Job, NewSession: s.NewSession},
			[]Effect{{Kind: ScheduleTimeout, ID: s.Job}}
	}
	return startNext(Snapshot{State: Idle, NewSession: s.NewSession}, in.QueueHead)
}

// restart repeats the start of the running job exactly. Starting is
// idempotent (the broker drops a second copy), so this only matters when
// the first start was cut short.
func restart(s Snapshot) (Snapshot, []Effect) {
	return s, []Effect{{Kind: Start, ID: s.Job, Action: s.Action, NewSession: s.JobNewSession, Dequeue: s.Action == ""}}
}

// startNext starts the oldest waiting message of an idle user, if any.
func startNext(s Snapshot, head string) (Snapshot, []Effect) {
	if head == "" {
		return Snapshot{State: Idle, NewSession: s.NewSession}, nil
	}
	return Snapshot{State: Working, Job: head, JobNewSession: s.NewSession},
		[]Effect{{Kind: Start, ID: head, Dequeue: true, NewSession: s.NewSession}}
}
