package fsm

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/textslash/textslash/contract"
)

// Projects: messages run in the project current when they start, a use
// sets the current project's approval aside and brings the entered one's
// back, and a run that ends with changes in a project left meanwhile
// parks them there.
func TestStepProjects(t *testing.T) {
	use := func(name, head string, exists bool) Input {
		return Input{Kind: Keyword, Keyword: Use, Arg: name, Text: "use " + name, ID: kwK, QueueHead: head, Exists: exists}
	}
	notice := func(format string, a ...any) Effect { return Effect{Kind: Notice, Text: fmt.Sprintf(format, a...)} }
	inWeb := contract.UserState{State: contract.StateIdle, Settings: contract.Settings{Project: "web"}}
	awaitingWeb := contract.UserState{State: contract.StateAwaitingApproval, JobID: jobJ, Settings: contract.Settings{Project: "web"}}
	workingWeb := contract.UserState{State: contract.StateWorking, JobID: jobJ, JobProject: "web", Settings: contract.Settings{Project: "web"}}
	for _, c := range []stepCase{
		{"idle + message → starts in the current project", inWeb, Input{Kind: Message, ID: msgM, Text: "hi"},
			contract.UserState{State: contract.StateWorking, JobID: msgM, JobProject: "web", Settings: contract.Settings{Project: "web"}},
			[]Effect{{Kind: Start, ID: msgM, Project: "web"}}},
		{"idle + use api → in api", inWeb, use("api", "", true),
			contract.UserState{State: contract.StateIdle, Settings: contract.Settings{Project: "api"}}, []Effect{notice(MsgUse, "api")}},
		{"idle + use default → in the default project", inWeb, use("default", "", true),
			contract.UserState{State: contract.StateIdle}, []Effect{notice(MsgUse, "default")}},
		{"idle + use of a project that is not theirs → a message like any other", inWeb, use("pnpm", "", false),
			contract.UserState{State: contract.StateWorking, JobID: kwK, JobProject: "web", Settings: contract.Settings{Project: "web"}},
			[]Effect{{Kind: Start, ID: kwK, Project: "web"}}},
		{"idle + use of the current project → already there", inWeb, use("web", "", true),
			inWeb, []Effect{notice(MsgUseAlready, "web")}},
		{"idle + use while messages wait → refused", inWeb, use("api", headQ, true),
			inWeb, []Effect{notice(MsgUseQueued, "web", "api")}},
		{"idle + use forgets a new session asked for in the project left", contract.UserState{State: contract.StateIdle, Settings: contract.Settings{Project: "web", NewSession: true}},
			use("api", "", true), contract.UserState{State: contract.StateIdle, Settings: contract.Settings{Project: "api"}}, []Effect{notice(MsgUse, "api")}},
		{"awaiting + use api → web's changes parked, api idle", awaitingWeb, use("api", "", true),
			contract.UserState{State: contract.StateIdle, Settings: contract.Settings{Project: "api", Parked: map[string]string{"web": jobJ}}},
			[]Effect{{Kind: CancelTimeout, ID: jobJ}, notice(MsgUse+MsgUseParked, "api", "web", "web")}},
		{"idle + use web, whose changes are parked → awaiting approval again", contract.UserState{State: contract.StateIdle, Settings: contract.Settings{Project: "api", Parked: map[string]string{"web": jobJ}}},
			use("web", "", true), awaitingWeb,
			[]Effect{notice(MsgUse, "web"), {Kind: ScheduleTimeout, ID: jobJ}, notice(MsgUnparked, "web")}},
		{"awaiting + approve → the approve job runs in the current project", awaitingWeb, Input{Kind: Keyword, Keyword: Approve, ID: kwK},
			contract.UserState{State: contract.StateWorking, JobID: kwK, Action: Approve, JobProject: "web", Settings: contract.Settings{Project: "web"}},
			[]Effect{{Kind: CancelTimeout, ID: jobJ}, notice(MsgApproving), {Kind: Start, ID: kwK, Action: Approve, Project: "web"}}},
		{"working + use api → the run goes on, api current", workingWeb, use("api", "", true),
			contract.UserState{State: contract.StateWorking, JobID: jobJ, JobProject: "web", Settings: contract.Settings{Project: "api"}}, []Effect{notice(MsgUse+MsgUseRunning, "api", "web")}},
		{"working in web, now in api + done with changes → parked in web, api's head starts",
			contract.UserState{State: contract.StateWorking, JobID: jobJ, JobProject: "web", Settings: contract.Settings{Project: "api"}}, Input{Kind: Done, ID: jobJ, Approval: true, QueueHead: headQ},
			contract.UserState{State: contract.StateWorking, JobID: headQ, JobProject: "api", Settings: contract.Settings{Project: "api", Parked: map[string]string{"web": jobJ}}},
			[]Effect{notice(MsgParkedDone, "web", "web"), {Kind: Start, ID: headQ, Dequeue: true, Project: "api"}}},
		{"working in web, now in api with parked changes + done → api's changes await approval",
			contract.UserState{State: contract.StateWorking, JobID: jobX, JobProject: "web", Settings: contract.Settings{Project: "api", Parked: map[string]string{"api": jobJ}}}, Input{Kind: Done, ID: jobX, QueueHead: headQ},
			contract.UserState{State: contract.StateAwaitingApproval, JobID: jobJ, Settings: contract.Settings{Project: "api"}},
			[]Effect{{Kind: ScheduleTimeout, ID: jobJ}, notice(MsgUnparked, "api")}},
		{"working + done with changes in the current project → awaiting approval", workingWeb, Input{Kind: Done, ID: jobJ, Approval: true},
			awaitingWeb, []Effect{{Kind: ScheduleTimeout, ID: jobJ}}},
		{"a parked approval's timeout is stale", contract.UserState{State: contract.StateIdle, Settings: contract.Settings{Project: "api", Parked: map[string]string{"web": jobJ}}}, Input{Kind: Timeout, ID: jobJ},
			contract.UserState{State: contract.StateIdle, Settings: contract.Settings{Project: "api", Parked: map[string]string{"web": jobJ}}}, nil},
		{"asking + use → answer first", contract.UserState{State: contract.StateAwaitingPermission, JobID: jobJ, Question: 1, JobProject: "web", Settings: contract.Settings{Project: "web"}}, use("api", "", true),
			contract.UserState{State: contract.StateAwaitingPermission, JobID: jobJ, Question: 1, JobProject: "web", Settings: contract.Settings{Project: "web"}}, []Effect{notice(MsgAnswerFirst)}},
		{"restart repeats the job's project", contract.UserState{State: contract.StateWorking, JobID: jobJ, JobProject: "web", Settings: contract.Settings{Project: "api"}}, Input{Kind: Message, ID: jobJ},
			contract.UserState{State: contract.StateWorking, JobID: jobJ, JobProject: "web", Settings: contract.Settings{Project: "api"}}, []Effect{{Kind: Start, ID: jobJ, Dequeue: true, Project: "web"}}},
		{"clone → a job in its turn, even with steer on", contract.UserState{State: contract.StateWorking, JobID: jobJ, Settings: contract.Settings{Steer: true}},
			Input{Kind: Keyword, Keyword: Clone, Arg: "https://h/r.git", Text: "clone https://h/r.git", ID: kwK},
			contract.UserState{State: contract.StateWorking, JobID: jobJ, Settings: contract.Settings{Steer: true}}, []Effect{{Kind: Enqueue, ID: kwK}}},
		{"idle + clone → starts", inWeb, Input{Kind: Keyword, Keyword: Clone, Arg: "https://h/r.git", Text: "clone https://h/r.git", ID: kwK},
			contract.UserState{State: contract.StateWorking, JobID: kwK, JobProject: "web", Settings: contract.Settings{Project: "web"}}, []Effect{{Kind: Start, ID: kwK, Project: "web"}}},
		{"clone refused → told why", inWeb, Input{Kind: Keyword, Keyword: Clone, Arg: "x:y", ID: kwK, Refusal: "bad url"},
			inWeb, []Effect{notice("bad url")}},
		{"projects → listed", awaitingWeb, Input{Kind: Keyword, Keyword: Projects, ID: kwK}, awaitingWeb, []Effect{{Kind: ListProjects}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, eff := Step(c.from, c.in)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got state %+v; want %+v", got, c.want)
			}
			if !slices.Equal(eff, c.eff) {
				t.Errorf("\n got effects  %+v\n want effects %+v", eff, c.eff)
			}
		})
	}
}

// TestParked: parking and unparking make a new map, never change the
// one of the state a step started from, and leave nil when none is left.
func TestParked(t *testing.T) {
	p0 := map[string]string{"web": "j1"}
	p := parked(parked(parked(p0, "api", "j2"), "web", "j3"), "x", "")
	if want := map[string]string{"api": "j2", "web": "j3"}; !reflect.DeepEqual(p, want) {
		t.Errorf("parked: got %v; want %v", p, want)
	}
	if want := map[string]string{"web": "j1"}; !reflect.DeepEqual(p0, want) {
		t.Errorf("parked changed its argument: got %v; want %v", p0, want)
	}
	if p := parked(parked(p, "api", ""), "web", ""); p != nil {
		t.Errorf("emptied parked: got %v; want nil", p)
	}
}

func TestParseProjectKeywords(t *testing.T) {
	for _, c := range []struct{ in, kw, arg string }{
		{"projects", Projects, ""}, {"Projects", Projects, ""}, {"use web", Use, "web"}, {"Use Web", Use, "web"},
		{"use pnpm instead of npm", "", ""}, {"use", "", ""},
		{"clone https://github.com/a/b.git", Clone, "https://github.com/a/b.git"},
		{"clone git@github.com:a/b.git mine", Clone, "git@github.com:a/b.git mine"},
		{"clone the repo and fix it", "", ""}, {"clone a b c", "", ""},
	} {
		kw, arg, ok := ParseKeyword(c.in)
		if kw != c.kw || arg != c.arg || ok != (c.kw != "") {
			t.Errorf("ParseKeyword(%q): got %q %q %v; want %q %q", c.in, kw, arg, ok, c.kw, c.arg)
		}
	}
}

func TestStepBranches(t *testing.T) {
	s, eff := Step(contract.UserState{State: contract.StateIdle}, Input{Kind: Keyword, Keyword: Branches, Arg: "on", ID: kwK})
	if !s.Branches || len(eff) != 1 || eff[0].Text != MsgBranchesOn {
		t.Errorf("branches on: %+v %+v", s, eff)
	}
	if s, _ = Step(s, Input{Kind: Done, ID: jobX}); !s.Branches {
		t.Error("the setting did not survive a transition")
	}
	if s, eff = Step(s, Input{Kind: Keyword, Keyword: Branches, Arg: "maybe", ID: kwK}); !s.Branches || eff[0].Text != MsgBranchesUsage {
		t.Errorf("branches maybe: %+v %+v", s, eff)
	}
	if kw, arg, ok := ParseKeyword("Branches ON"); kw != Branches || arg != "on" || !ok {
		t.Errorf("ParseKeyword(Branches ON) = %q %q %v", kw, arg, ok)
	}
}
