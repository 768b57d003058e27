package fsm

import (
	"fmt"
	"slices"
	"testing"
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
	inWeb := Snapshot{State: Idle, Project: "web"}
	awaitingWeb := Snapshot{State: AwaitingApproval, Job: jobJ, Project: "web"}
	workingWeb := Snapshot{State: Working, Job: jobJ, Project: "web", JobProject: "web"}
	for _, c := range []stepCase{
		{"idle + message → starts in the current project", inWeb, Input{Kind: Message, ID: msgM, Text: "hi"},
			Snapshot{State: Working, Job: msgM, Project: "web", JobProject: "web"},
			[]Effect{{Kind: Start, ID: msgM, Project: "web"}}},
		{"idle + use api → in api", inWeb, use("api", "", true),
			Snapshot{State: Idle, Project: "api"}, []Effect{notice(MsgUse, "api")}},
		{"idle + use default → in the default project", inWeb, use("default", "", true),
			Snapshot{State: Idle}, []Effect{notice(MsgUse, "default")}},
		{"idle + use of a project that is not theirs → a message like any other", inWeb, use("pnpm", "", false),
			Snapshot{State: Working, Job: kwK, Project: "web", JobProject: "web"},
			[]Effect{{Kind: Start, ID: kwK, Project: "web"}}},
		{"idle + use of the current project → already there", inWeb, use("web", "", true),
			inWeb, []Effect{notice(MsgUseAlready, "web")}},
		{"idle + use while messages wait → refused", inWeb, use("api", headQ, true),
			inWeb, []Effect{notice(MsgUseQueued, "web", "api")}},
		{"idle + use forgets a new session asked for in the project left", Snapshot{State: Idle, Project: "web", NewSession: true},
			use("api", "", true), Snapshot{State: Idle, Project: "api"}, []Effect{notice(MsgUse, "api")}},
		{"awaiting + use api → web's changes parked, api idle", awaitingWeb, use("api", "", true),
			Snapshot{State: Idle, Project: "api", Parked: "web=" + jobJ},
			[]Effect{{Kind: CancelTimeout, ID: jobJ}, notice(MsgUse+MsgUseParked, "api", "web", "web")}},
		{"idle + use web, whose changes are parked → awaiting approval again", Snapshot{State: Idle, Project: "api", Parked: "web=" + jobJ},
			use("web", "", true), awaitingWeb,
			[]Effect{notice(MsgUse, "web"), {Kind: ScheduleTimeout, ID: jobJ}, notice(MsgUnparked, "web")}},
		{"awaiting + approve → the approve job runs in the current project", awaitingWeb, Input{Kind: Keyword, Keyword: Approve, ID: kwK},
			Snapshot{State: Working, Job: kwK, Action: Approve, Project: "web", JobProject: "web"},
			[]Effect{{Kind: CancelTimeout, ID: jobJ}, notice(MsgApproving), {Kind: Start, ID: kwK, Action: Approve, Project: "web"}}},
		{"working + use api → the run goes on, api current", workingWeb, use("api", "", true),
			Snapshot{State: Working, Job: jobJ, Project: "api", JobProject: "web"}, []Effect{notice(MsgUse+MsgUseRunning, "api", "web")}},
		{"working in web, now in api + done with changes → parked in web, api's head starts",
			Snapshot{State: Working, Job: jobJ, Project: "api", JobProject: "web"}, Input{Kind: Done, ID: jobJ, Approval: true, QueueHead: headQ},
			Snapshot{State: Working, Job: headQ, Project: "api", JobProject: "api", Parked: "web=" + jobJ},
			[]Effect{notice(MsgParkedDone, "web", "web"), {Kind: Start, ID: headQ, Dequeue: true, Project: "api"}}},
		{"working in web, now in api with parked changes + done → api's changes await approval",
			Snapshot{State: Working, Job: jobX, Project: "api", JobProject: "web", Parked: "api=" + jobJ}, Input{Kind: Done, ID: jobX, QueueHead: headQ},
			Snapshot{State: AwaitingApproval, Job: jobJ, Project: "api"},
			[]Effect{{Kind: ScheduleTimeout, ID: jobJ}, notice(MsgUnparked, "api")}},
		{"working + done with changes in the current project → awaiting approval", workingWeb, Input{Kind: Done, ID: jobJ, Approval: true},
			awaitingWeb, []Effect{{Kind: ScheduleTimeout, ID: jobJ}}},
		{"a parked approval's timeout is stale", Snapshot{State: Idle, Project: "api", Parked: "web=" + jobJ}, Input{Kind: Timeout, ID: jobJ},
			Snapshot{State: Idle, Project: "api", Parked: "web=" + jobJ}, nil},
		{"asking + use → answer first", Snapshot{State: AwaitingPermission, Job: jobJ, Question: 1, Project: "web", JobProject: "web"}, use("api", "", true),
			Snapshot{State: AwaitingPermission, Job: jobJ, Question: 1, Project: "web", JobProject: "web"}, []Effect{notice(MsgAnswerFirst)}},
		{"restart repeats the job's project", Snapshot{State: Working, Job: jobJ, Project: "api", JobProject: "web"}, Input{Kind: Message, ID: jobJ},
			Snapshot{State: Working, Job: jobJ, Project: "api", JobProject: "web"}, []Effect{{Kind: Start, ID: jobJ, Dequeue: true, Project: "web"}}},
		{"clone → a job in its turn, even with steer on", Snapshot{State: Working, Job: jobJ, Steer: true},
			Input{Kind: Keyword, Keyword: Clone, Arg: "https://h/r.git", Text: "clone https://h/r.git", ID: kwK},
			Snapshot{State: Working, Job: jobJ, Steer: true}, []Effect{{Kind: Enqueue, ID: kwK}}},
		{"idle + clone → starts", inWeb, Input{Kind: Keyword, Keyword: Clone, Arg: "https://h/r.git", Text: "clone https://h/r.git", ID: kwK},
			Snapshot{State: Working, Job: kwK, Project: "web", JobProject: "web"}, []Effect{{Kind: Start, ID: kwK, Project: "web"}}},
		{"clone refused → told why", inWeb, Input{Kind: Keyword, Keyword: Clone, Arg: "x:y", ID: kwK, Refusal: "bad url"},
			inWeb, []Effect{notice("bad url")}},
		{"projects → listed", awaitingWeb, Input{Kind: Keyword, Keyword: Projects, ID: kwK}, awaitingWeb, []Effect{{Kind: ListProjects}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, eff := Step(c.from, c.in)
			if got != c.want {
				t.Errorf("got state %+v; want %+v", got, c.want)
			}
			if !slices.Equal(eff, c.eff) {
				t.Errorf("\n got effects  %+v\n want effects %+v", eff, c.eff)
			}
		})
	}
}

func TestParkedRoundTrip(t *testing.T) {
	p := Parked("").With("web", "j1").With("api", "j2").With("web", "j3")
	if p != "api=j2 web=j3" || p.Get("web") != "j3" || p.Get("x") != "" {
		t.Errorf("parked %q", p)
	}
	if q := ParkedOf(p.Map()); q != p {
		t.Errorf("ParkedOf(Map) = %q; want %q", q, p)
	}
	if p.With("api", "").With("web", "") != "" {
		t.Error("emptied parked not empty")
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
	s, eff := Step(Snapshot{State: Idle}, Input{Kind: Keyword, Keyword: Branches, Arg: "on", ID: kwK})
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
