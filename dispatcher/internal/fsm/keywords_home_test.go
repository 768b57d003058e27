package fsm

import (
	"testing"

	"github.com/textslash/textslash/contract"
)

// The home's keywords: preview with a port, off or nothing, previews, and
// stop with a background process's id; anything else that starts so is a
// message.
func TestParseHomeKeywords(t *testing.T) {
	for _, tt := range []struct {
		in, kw, arg string
		ok          bool
	}{
		{"preview 5173", Preview, "5173", true},
		{"Preview OFF", Preview, "off", true},
		{"preview", Preview, "", true},
		{"previews", Previews, "", true},
		{"stop 3F2a", Stop, "3f2a", true},
		{"preview the page on my phone", "", "", false},
		{"preview 0", "", "", false},
		{"preview 70000", "", "", false},
		{"stop the server", "", "", false},
		{"stop", "", "", false},
	} {
		kw, arg, ok := ParseKeyword(tt.in)
		if kw != tt.kw || arg != tt.arg || ok != tt.ok {
			t.Errorf("ParseKeyword(%q) = %q, %q, %v; want %q, %q, %v", tt.in, kw, arg, ok, tt.kw, tt.arg, tt.ok)
		}
	}
}

// A home keyword is a job of its own for the runner, in its turn: it
// starts when idle and waits behind a run.
func TestHomeKeywordIsAJob(t *testing.T) {
	idle := contract.UserState{State: contract.StateIdle}
	next, eff := Step(idle, Input{Kind: Keyword, ID: "m1", Keyword: Preview, Arg: "5173", Text: "preview 5173"})
	if next.State != contract.StateWorking || len(eff) == 0 || eff[0].Kind != Start || eff[0].ID != "m1" {
		t.Errorf("idle: %+v %+v; want m1 started", next, eff)
	}
	busy := contract.UserState{State: contract.StateWorking, JobID: "m0"}
	next, eff = Step(busy, Input{Kind: Keyword, ID: "m2", Keyword: Stop, Arg: "3f2a", Text: "stop 3f2a"})
	if next.JobID != "m0" || len(eff) == 0 || eff[0].Kind == Start {
		t.Errorf("busy: %+v %+v; want it queued behind m0", next, eff)
	}
}
