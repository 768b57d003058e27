package fsm

import (
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
)

// TestDoneWarmUntil: a run's end says until when the person's home stays
// warm, and the state keeps what the newest end said: a done of the
// running job, of a job just cancelled (the last finished), or of one the
// state never knew; not a done redelivered after a later run ended. A
// zero WarmUntil (an old runner's, a run outside a home) clears it, and
// nothing but a done changes it.
func TestDoneWarmUntil(t *testing.T) {
	before := time.Date(2026, 11, 26, 10, 30, 0, 0, time.UTC)
	until := time.Date(2026, 11, 26, 10, 42, 0, 0, time.UTC)
	doneWarm := func(id string, approval bool, t time.Time) Input {
		return Input{Kind: Done, ID: id, Approval: approval, WarmUntil: t}
	}
	state := func(state, job string, finished []string, warm time.Time) contract.UserState {
		return contract.UserState{State: state, JobID: job, Finished: finished, WarmUntil: warm}
	}
	for _, tt := range []struct {
		name string
		from contract.UserState
		in   Input
		want time.Time
	}{
		{"working + its done, warm → kept", state(contract.StateWorking, jobJ, nil, time.Time{}),
			doneWarm(jobJ, false, until), until},
		{"working + its done with changes, warm → kept", state(contract.StateWorking, jobJ, nil, before),
			doneWarm(jobJ, true, until), until},
		{"working + its done, not kept → cleared", state(contract.StateWorking, jobJ, nil, before),
			doneWarm(jobJ, false, time.Time{}), time.Time{}},
		{"idle after cancel + the cancelled run's done, not kept → cleared", state(contract.StateIdle, "", []string{jobX, jobJ}, before),
			doneWarm(jobJ, false, time.Time{}), time.Time{}},
		{"idle after cancel + the cancelled run's done, home kept → kept", state(contract.StateIdle, "", []string{jobJ}, before),
			doneWarm(jobJ, false, until), until},
		{"working on the next + the cancelled run's done → kept", state(contract.StateWorking, msgM, []string{jobJ}, before),
			doneWarm(jobJ, false, until), until},
		{"idle + a done the state never knew → kept", state(contract.StateIdle, "", []string{jobJ}, before),
			doneWarm(jobX, false, until), until},
		{"idle + an earlier run's done redelivered → the later one's stays", state(contract.StateIdle, "", []string{jobX, jobJ}, until),
			doneWarm(jobX, false, before), until},
		{"idle, warm + a message → working, still warm", state(contract.StateIdle, "", nil, until),
			Input{Kind: Message, ID: msgM}, until},
		{"working, warm + cancel → idle, still warm (its done says)", state(contract.StateWorking, jobJ, nil, until),
			Input{Kind: Keyword, Keyword: Cancel, ID: kwK}, until},
		{"awaiting, warm + approve → working, still warm", state(contract.StateAwaitingApproval, jobJ, nil, until),
			Input{Kind: Keyword, Keyword: Approve, ID: kwK}, until},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := Step(tt.from, tt.in)
			if !got.WarmUntil.Equal(tt.want) {
				t.Errorf("Step(%s, %s): WarmUntil = %v; want %v", fmtSnap(tt.from), fmtInput(tt.in), got.WarmUntil, tt.want)
			}
		})
	}
}
