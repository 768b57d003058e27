// Projects: use switches between them, clone adds one (a job of the
// runner's), and changes awaiting approval wait (parked) in the project
// they were made in.

package fsm

import (
	"fmt"
	"maps"

	"github.com/textslash/textslash/contract"
)

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
