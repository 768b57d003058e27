// Permission questions: a running job asks, the person answers (yes,
// always, no with what to do instead), or nobody does in time.

package fsm

import (
	"strings"

	"github.com/textslash/textslash/contract"
)

// answer is the person's answer to the question the running job waits on.
func answer(s contract.UserState, in Input) (contract.UserState, []Effect) {
	a, reason := contract.ParseAnswer(in.Text)
	text, told := MsgAllowed, ""
	switch {
	case a == contract.AnswerAlways:
		text = MsgAlways
	case a == contract.AnswerDeny && reason == "":
		text, told = MsgDenied, contract.DeniedNo
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
	return next, []Effect{{Kind: Answer, ID: s.JobID, Question: s.Question, Answer: contract.AnswerDeny, Text: contract.DeniedNoAnswer},
		{Kind: TimedOut, ID: s.JobID, Question: s.Question}}
}
