package fsm

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/textslash/textslash/contract"
)

func TestParseKeyword(t *testing.T) {
	type parseCase struct {
		in   string
		want string
		ok   bool
	}
	var cases []parseCase
	for _, k := range []string{Cancel, Approve, Reject, Status, More, New, Help, Go} {
		upper := strings.ToUpper(k)
		title := strings.ToUpper(k[:1]) + k[1:]
		mixed := []rune(k)
		for i := range mixed {
			if i%2 == 1 {
				mixed[i] = unicode.ToUpper(mixed[i])
			}
		}
		for _, in := range []string{
			k, upper, title, string(mixed),
			" " + k, k + " ", "  " + upper + "\t",
			"\n" + k + "\n", "\r\n" + title + "\r\n", "\n\n " + k + " \n",
			"\u00a0" + k + "\u3000", // no-break and ideographic spaces are spaces
		} {
			cases = append(cases, parseCase{in, k, true})
		}
	}
	for _, in := range []string{
		"", " ", "\n\t",
		"cancel please", "please cancel", "can cel", "c ancel", "cancel.", "cancel!", "'cancel'",
		"approved", "approve it", "rejected", "statuses", "more?", "new session", "helpme", "help me",
		"cancelcancel", "stop", "yes", "no", "c",
		"c\u0430ncel",           // Cyrillic а
		"\u0430pprove",          // Cyrillic а
		"r\u0435ject",           // Cyrillic е
		"\u0455tatus",           // Cyrillic ѕ
		"m\u043ere",             // Cyrillic о
		"n\u0435w",              // Cyrillic е
		"h\u0435lp",             // Cyrillic е
		"\u017ftatus",           // long s, whose upper case is S
		"ｃａｎｃｅｌ",                // full-width
		"ＨＥＬＰ",                  // full-width
		"cancel\u200b",          // zero-width space is no space
		"\u200bhelp",            // zero-width space is no space
		"he\u0301lp",            // combining accent
		"\U0001d5ebelp",         // mathematical sans-serif h
		"approve\x00",           // NUL
		"\u2060new\u2060",       // word joiners
		"mo\u00adre",            // soft hyphen
		"status\ufeff",          // byte-order mark
		"CANCEL\u0130",          // dotted capital I
		"r\u0117ject",           // e with dot above
		"\u0441\u0430nc\u0435l", // mostly Cyrillic
	} {
		cases = append(cases, parseCase{in, "", false})
	}
	for _, c := range cases {
		got, arg, ok := ParseKeyword(c.in)
		if got != c.want || ok != c.ok || arg != "" {
			t.Errorf("ParseKeyword(%q): got %q %q, %v; want %q, %v", c.in, got, arg, ok, c.want, c.ok)
		}
	}
	for _, c := range []struct{ in, kw, arg string }{
		{"mode ask", Mode, "ask"}, {"Mode PLAN", Mode, "plan"}, {"mode", Mode, ""}, {"mode: auto", Mode, "auto"},
		{"mode ask please", "", ""}, {"steer on", Steer, "on"}, {" STEER off ", Steer, "off"}, {"steer", Steer, ""},
		{"btw use pnpm", Btw, "use pnpm"}, {"BTW: also run the tests", Btw, "also run the tests"}, {"btw", "", ""},
		{"btwx hi", "", ""}, {"by the way", "", ""}, {"modes ask", "", ""},
	} {
		kw, arg, ok := ParseKeyword(c.in)
		if kw != c.kw || arg != c.arg || ok != (c.kw != "") {
			t.Errorf("ParseKeyword(%q): got %q %q %v; want %q %q", c.in, kw, arg, ok, c.kw, c.arg)
		}
	}
}

// stepCase is one transition: from a snapshot, an input, the exact next
// snapshot and the exact effects in order.
type stepCase struct {
	name string
	from contract.UserState
	in   Input
	want contract.UserState
	eff  []Effect
}

// Ids in the step tables.
const (
	jobJ  = "j1" // the running job, or the one awaiting approval
	msgM  = "m2" // a new message
	headQ = "q1" // the oldest waiting message
	kwK   = "k3" // a keyword's message
	jobX  = "x9" // some other job
)

// stepCases are every transition of a user whose NewSession flag is ns.
func stepCases(ns bool) []stepCase {
	idle := contract.UserState{State: contract.StateIdle, Settings: contract.Settings{NewSession: ns}}
	working := contract.UserState{State: contract.StateWorking, JobID: jobJ, Settings: contract.Settings{NewSession: ns}}
	awaiting := contract.UserState{State: contract.StateAwaitingApproval, JobID: jobJ, Settings: contract.Settings{NewSession: ns}}
	withNew := func(s contract.UserState) contract.UserState { s.NewSession = true; return s }
	// A message job starts with the user's flag, which it uses up.
	startQ := Effect{Kind: Start, ID: headQ, Dequeue: true, NewSession: ns}
	fromQ := contract.UserState{State: contract.StateWorking, JobID: headQ, JobNewSession: ns}
	notice := func(text string) Effect { return Effect{Kind: Notice, Text: text} }
	msg := func(id, head string) Input { return Input{Kind: Message, ID: id, QueueHead: head, Text: "hi"} }
	kw := func(k, head string) Input { return Input{Kind: Keyword, Keyword: k, ID: kwK, QueueHead: head} }
	done := func(id string, approval bool, head string) Input {
		return Input{Kind: Done, ID: id, Approval: approval, QueueHead: head}
	}
	timeout := func(id, head string) Input { return Input{Kind: Timeout, ID: id, QueueHead: head} }
	kick := func(head string) Input { return Input{Kind: Kick, QueueHead: head} }
	question := func(id string, n int) Input { return Input{Kind: Question, ID: id, Question: n} }
	text := func(id, t string) Input { return Input{Kind: Message, ID: id, Text: t} }
	asking := contract.UserState{State: contract.StateAwaitingPermission, JobID: jobJ, Question: 2, Settings: contract.Settings{NewSession: ns}}
	answered := asking
	answered.State = contract.StateWorking
	steering := working
	steering.Steer = true

	var cases []stepCase
	// Keywords that do the same in every state.
	for _, st := range []struct {
		name string
		s    contract.UserState
	}{{"idle", idle}, {"working", working}, {"awaiting", awaiting}} {
		for _, head := range []string{"", headQ} {
			h := "empty queue"
			if head != "" {
				h = "queue waiting"
			}
			cases = append(cases,
				stepCase{st.name + " + help, " + h, st.s, kw(Help, head), st.s, []Effect{notice(MsgHelp)}},
				stepCase{st.name + " + status, " + h, st.s, kw(Status, head), st.s, []Effect{{Kind: ReportStatus}}},
				stepCase{st.name + " + more, " + h, st.s, kw(More, head), st.s, []Effect{{Kind: NextPage}}},
				stepCase{st.name + " + new, " + h, st.s, kw(New, head), withNew(st.s), []Effect{notice(MsgNewSession)}},
				stepCase{st.name + " + unknown keyword, " + h, st.s, kw("bogus", head), st.s, nil},
				stepCase{st.name + " + unknown input kind, " + h, st.s, Input{ID: msgM, QueueHead: head}, st.s, nil},
			)
		}
	}
	cases = append(cases, []stepCase{
		// idle
		{"idle + user message → working", idle, msg(msgM, ""),
			contract.UserState{State: contract.StateWorking, JobID: msgM, JobNewSession: ns}, []Effect{{Kind: Start, ID: msgM, NewSession: ns}}},
		{"idle + message while earlier ones wait → queued behind them, head starts", idle, msg(msgM, headQ),
			fromQ, []Effect{{Kind: Enqueue, ID: msgM}, startQ}},
		{"idle + message that is the queue head (redelivered) → it starts once", idle, msg(headQ, headQ),
			fromQ, []Effect{{Kind: Enqueue, ID: headQ}, startQ}},
		{"idle + cancel → nothing to stop", idle, kw(Cancel, ""), idle, []Effect{notice(MsgNothingToStop)}},
		// Doubt: the queue is not cleared although messages wait.
		{"idle + cancel while messages wait → nothing to stop, queue kept", idle, kw(Cancel, headQ), idle, []Effect{notice(MsgNothingToStop)}},
		{"idle + approve → nothing awaits approval", idle, kw(Approve, ""), idle, []Effect{notice(MsgNoApproval)}},
		{"idle + reject → nothing awaits approval", idle, kw(Reject, headQ), idle, []Effect{notice(MsgNoApproval)}},
		{"idle + done (stale)", idle, done(jobJ, false, ""), idle, nil},
		{"idle + done (stale) while messages wait → left to kick", idle, done(jobJ, false, headQ), idle, nil},
		{"idle + done with approval (stale)", idle, done(jobJ, true, headQ), idle, nil},
		{"idle + timeout (stale)", idle, timeout(jobJ, ""), idle, nil},
		{"idle + timeout (stale) while messages wait", idle, timeout(jobJ, headQ), idle, nil},
		{"idle + kick, empty queue", idle, kick(""), idle, nil},
		{"idle + kick, queue waiting → head starts", idle, kick(headQ), fromQ, []Effect{startQ}},

		// working
		{"working + message → queued", working, msg(msgM, ""), working, []Effect{{Kind: Enqueue, ID: msgM}}},
		{"working + message, queue waiting → queued", working, msg(msgM, headQ), working, []Effect{{Kind: Enqueue, ID: msgM}}},
		// The re-start repeats how the job was started (see
		// TestStepRestartRepeatsStart); this working job was started
		// without a new session.
		{"working + the running message again → started again (idempotent)", working, msg(jobJ, headQ),
			working, []Effect{{Kind: Start, ID: jobJ, Dequeue: true}}},
		{"working + cancel → idle, run cancelled, queue cleared", working, kw(Cancel, headQ),
			idle, []Effect{{Kind: CancelRun, ID: jobJ}, {Kind: ClearQueue}, notice(MsgCancelled)}},
		{"working + cancel, empty queue", working, kw(Cancel, ""),
			idle, []Effect{{Kind: CancelRun, ID: jobJ}, {Kind: ClearQueue}, notice(MsgCancelled)}},
		{"working + cancel, two waiting → the notice says they were dropped", working, Input{Kind: Keyword, Keyword: Cancel, ID: kwK, QueueHead: headQ, Waiting: 2},
			idle, []Effect{{Kind: CancelRun, ID: jobJ}, {Kind: ClearQueue}, notice("Cancelled. Nothing is running now. 2 waiting messages were dropped.")}},
		{"working + approve → still working", working, kw(Approve, ""), working, []Effect{notice(MsgStillWorking)}},
		{"working + reject → still working", working, kw(Reject, headQ), working, []Effect{notice(MsgStillWorking)}},
		{"working + done → idle", working, done(jobJ, false, ""), idle, nil},
		{"working + done, queue waiting → head starts", working, done(jobJ, false, headQ), fromQ, []Effect{startQ}},
		{"working + done with approval → awaiting_approval, timer armed", working, done(jobJ, true, ""),
			awaiting, []Effect{{Kind: ScheduleTimeout, ID: jobJ}}},
		{"working + done with approval, queue waiting → awaiting_approval, queue waits", working, done(jobJ, true, headQ),
			awaiting, []Effect{{Kind: ScheduleTimeout, ID: jobJ}}},
		// The re-start repeats Action and NewSession: see TestStepRestartRepeatsStart.
		{"working + done of another job → current job started again", working, done(jobX, false, ""),
			working, []Effect{{Kind: Start, ID: jobJ, Dequeue: true}}},
		{"working + done with approval of another job → current job started again", working, done(jobX, true, headQ),
			working, []Effect{{Kind: Start, ID: jobJ, Dequeue: true}}},
		{"working + timeout of the job (stale)", working, timeout(jobJ, headQ), working, nil},
		{"working + timeout of another job (stale)", working, timeout(jobX, ""), working, nil},
		{"working + kick, empty queue", working, kick(""), working, nil},
		{"working + kick, queue waiting → nothing starts", working, kick(headQ), working, nil},

		// awaiting_permission: the running job asked question 2
		{"working + question → awaiting_permission, its timer armed", working, question(jobJ, 2),
			asking, []Effect{{Kind: ScheduleTimeout, ID: jobJ, Question: 2}}},
		{"working + a question answered before (redelivered)", answered, question(jobJ, 2), answered, nil},
		{"working + a question of another job (stale)", working, question(jobX, 1), working, nil},
		{"idle + question (the run was cancelled)", idle, question(jobJ, 1), idle, nil},
		{"asking + the same question again", asking, question(jobJ, 2), asking, nil},
		{"asking + yes → working, allowed", asking, text(msgM, "Yes"), answered, []Effect{
			{Kind: CancelTimeout, ID: jobJ, Question: 2}, {Kind: Answer, ID: jobJ, Question: 2, Answer: contract.AnswerAllow}, notice(MsgAllowed)}},
		{"asking + always → working, always", asking, text(msgM, "always"), answered, []Effect{
			{Kind: CancelTimeout, ID: jobJ, Question: 2}, {Kind: Answer, ID: jobJ, Question: 2, Answer: contract.AnswerAlways}, notice(MsgAlways)}},
		{"asking + no, with a reason → working, denied with it", asking, text(msgM, "no, use pnpm"), answered, []Effect{
			{Kind: CancelTimeout, ID: jobJ, Question: 2}, {Kind: Answer, ID: jobJ, Question: 2, Answer: contract.AnswerDeny, Text: "use pnpm"},
			notice(MsgDeniedReason + "use pnpm")}},
		{"asking + the running message again → its start repeated, no answer", asking, msg(jobJ, ""),
			asking, []Effect{{Kind: Start, ID: jobJ, Dequeue: true}}},
		{"asking + approve → answer first", asking, kw(Approve, ""), asking, []Effect{notice(MsgAnswerFirst)}},
		{"asking + cancel → idle, timer and run cancelled", asking, kw(Cancel, headQ), idle, []Effect{
			{Kind: CancelTimeout, ID: jobJ, Question: 2}, {Kind: CancelRun, ID: jobJ}, {Kind: ClearQueue}, notice(MsgCancelled)}},
		{"asking + btw → added to the run", asking, Input{Kind: Keyword, Keyword: Btw, Arg: "use pnpm", ID: kwK},
			asking, []Effect{{Kind: SteerRun, ID: jobJ, Text: "use pnpm"}, notice(MsgSteered)}},
		{"asking + timeout of the question → working, denied", asking, Input{Kind: Timeout, ID: jobJ, Question: 2},
			answered, []Effect{{Kind: Answer, ID: jobJ, Question: 2, Answer: contract.AnswerDeny, Text: contract.DeniedNoAnswer}, {Kind: TimedOut, ID: jobJ, Question: 2}}},
		{"working + timeout of an answered question (stale)", answered, Input{Kind: Timeout, ID: jobJ, Question: 2}, answered, nil},
		{"asking + done (runner died, or cancelled) → idle, timer cancelled", asking, done(jobJ, false, ""),
			idle, []Effect{{Kind: CancelTimeout, ID: jobJ, Question: 2}}},
		{"asking + done, queue waiting → timer cancelled, head starts", asking, done(jobJ, false, headQ),
			fromQ, []Effect{{Kind: CancelTimeout, ID: jobJ, Question: 2}, startQ}},
		{"working, steer on + message → added to the run", steering, msg(msgM, ""),
			steering, []Effect{{Kind: SteerRun, ID: jobJ, Text: "hi"}, notice(MsgSteered)}},
		{"asking + a scheduled task → queued, no answer", asking, Input{Kind: Message, ID: msgM, Text: "run the tests", Scheduled: true},
			asking, []Effect{{Kind: Enqueue, ID: msgM}}},
		{"asking + a voice note or a file → queued, no answer", asking, Input{Kind: Message, ID: msgM, Media: true},
			asking, []Effect{{Kind: Enqueue, ID: msgM}}},
		{"working, steer on + a scheduled task → queued", steering, Input{Kind: Message, ID: msgM, Text: "run the tests", Scheduled: true},
			steering, []Effect{{Kind: Enqueue, ID: msgM}}},
		{"working, steer on + message with images → queued", steering, Input{Kind: Message, ID: msgM, Text: "hi", Media: true},
			steering, []Effect{{Kind: Enqueue, ID: msgM}}},
		{"idle + btw → a message like any other", idle, Input{Kind: Keyword, Keyword: Btw, Arg: "x", Text: "btw x", ID: kwK},
			contract.UserState{State: contract.StateWorking, JobID: kwK, JobNewSession: ns}, []Effect{{Kind: Start, ID: kwK, NewSession: ns}}},

		// awaiting_approval
		{"awaiting + message → queued", awaiting, msg(msgM, ""), awaiting, []Effect{{Kind: Enqueue, ID: msgM}}},
		{"awaiting + message, queue waiting → queued", awaiting, msg(msgM, headQ), awaiting, []Effect{{Kind: Enqueue, ID: msgM}}},
		// The message whose run awaits approval, redelivered, ran already.
		{"awaiting + the awaiting job's message again → dropped", awaiting, msg(jobJ, ""), awaiting, nil},
		{"awaiting + approve → working on an approve job", awaiting, kw(Approve, ""),
			contract.UserState{State: contract.StateWorking, JobID: kwK, Action: Approve, Settings: contract.Settings{NewSession: ns}},
			[]Effect{{Kind: CancelTimeout, ID: jobJ}, notice(MsgApproving), {Kind: Start, ID: kwK, Action: Approve}}},
		{"awaiting + approve, queue waiting → working on an approve job, queue waits", awaiting, kw(Approve, headQ),
			contract.UserState{State: contract.StateWorking, JobID: kwK, Action: Approve, Settings: contract.Settings{NewSession: ns}},
			[]Effect{{Kind: CancelTimeout, ID: jobJ}, notice(MsgApproving), {Kind: Start, ID: kwK, Action: Approve}}},
		{"awaiting + reject → working on a reject job", awaiting, kw(Reject, ""),
			contract.UserState{State: contract.StateWorking, JobID: kwK, Action: Reject, Settings: contract.Settings{NewSession: ns}},
			[]Effect{{Kind: CancelTimeout, ID: jobJ}, notice(MsgRejecting), {Kind: Start, ID: kwK, Action: Reject}}},
		{"awaiting + reject, queue waiting → working on a reject job, queue waits", awaiting, kw(Reject, headQ),
			contract.UserState{State: contract.StateWorking, JobID: kwK, Action: Reject, Settings: contract.Settings{NewSession: ns}},
			[]Effect{{Kind: CancelTimeout, ID: jobJ}, notice(MsgRejecting), {Kind: Start, ID: kwK, Action: Reject}}},
		{"awaiting + cancel → idle, changes kept, queue cleared", awaiting, kw(Cancel, headQ),
			idle, []Effect{{Kind: CancelTimeout, ID: jobJ}, {Kind: ClearQueue}, notice(MsgCancelledKept)}},
		{"awaiting + cancel, empty queue", awaiting, kw(Cancel, ""),
			idle, []Effect{{Kind: CancelTimeout, ID: jobJ}, {Kind: ClearQueue}, notice(MsgCancelledKept)}},
		{"awaiting + cancel, one waiting → the notice says it was dropped", awaiting, Input{Kind: Keyword, Keyword: Cancel, ID: kwK, QueueHead: headQ, Waiting: 1},
			idle, []Effect{{Kind: CancelTimeout, ID: jobJ}, {Kind: ClearQueue}, notice("Cancelled. The changes stay in your workspace, uncommitted. 1 waiting message was dropped.")}},
		{"awaiting + done of the job (redelivered)", awaiting, done(jobJ, true, headQ), awaiting, nil},
		{"awaiting + done without approval of the job (redelivered)", awaiting, done(jobJ, false, headQ), awaiting, nil},
		{"awaiting + done of another job (stale)", awaiting, done(jobX, false, headQ), awaiting, nil},
		{"awaiting + timeout → idle, changes kept", awaiting, timeout(jobJ, ""), idle, []Effect{{Kind: TimedOut, ID: jobJ}}},
		{"awaiting + timeout, queue waiting → head starts", awaiting, timeout(jobJ, headQ),
			fromQ, []Effect{{Kind: TimedOut, ID: jobJ}, startQ}},
		{"awaiting + timeout of another job (stale)", awaiting, timeout(jobX, headQ), awaiting, nil},
		{"awaiting + kick, empty queue", awaiting, kick(""), awaiting, nil},
		{"awaiting + kick, queue waiting → nothing starts", awaiting, kick(headQ), awaiting, nil},
	}...)
	return cases
}

func TestStep(t *testing.T) {
	for _, ns := range []bool{false, true} {
		for _, c := range stepCases(ns) {
			t.Run(fmt.Sprintf("%s/new_session=%v", c.name, ns), func(t *testing.T) {
				got, eff := Step(c.from, c.in)
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("Step(%s, %s): got state %s; want %s", fmtSnap(c.from), fmtInput(c.in), fmtSnap(got), fmtSnap(c.want))
				}
				if !slices.Equal(eff, c.eff) {
					t.Errorf("Step(%s, %s):\n got effects  %s\n want effects %s", fmtSnap(c.from), fmtInput(c.in), fmtEffects(eff), fmtEffects(c.eff))
				}
			})
		}
	}
}

// TestStepApprovalFlows follows an approval and a rejection to their end:
// awaiting_approval → approve/reject → working → idle.
func TestStepApprovalFlows(t *testing.T) {
	for _, action := range []string{Approve, Reject} {
		t.Run(action, func(t *testing.T) {
			s := contract.UserState{State: contract.StateAwaitingApproval, JobID: jobJ}
			s, _ = Step(s, Input{Kind: Keyword, Keyword: action, ID: kwK})
			if want := (contract.UserState{State: contract.StateWorking, JobID: kwK, Action: action}); !reflect.DeepEqual(s, want) {
				t.Fatalf("after %s: got %s; want %s", action, fmtSnap(s), fmtSnap(want))
			}
			s, eff := Step(s, Input{Kind: Done, ID: kwK})
			if want := (contract.UserState{State: contract.StateIdle}); !reflect.DeepEqual(s, want) || len(eff) != 0 {
				t.Fatalf("after the %s job's done: got %s %s; want %s []", action, fmtSnap(s), fmtEffects(eff), fmtSnap(want))
			}
		})
	}
}

// TestStepRestartRepeatsStart: where the machine starts the current job
// again because its first start may have been cut short (the broker
// deduplicates the second one if the first went out), the second Start must
// be the first one again. Otherwise a start cut short is repaired with a
// different job, or not at all.
func TestStepRestartRepeatsStart(t *testing.T) {
	type restart struct {
		name  string
		from  contract.UserState
		first Input // leads to the first Start
		again Input // must repeat it
	}
	for _, c := range []restart{
		{"message after new, redelivered", contract.UserState{State: contract.StateIdle, Settings: contract.Settings{NewSession: true}},
			Input{Kind: Message, ID: msgM}, Input{Kind: Message, ID: msgM}},
		{"message after new, stale done of another job", contract.UserState{State: contract.StateIdle, Settings: contract.Settings{NewSession: true}},
			Input{Kind: Message, ID: msgM}, Input{Kind: Done, ID: jobX}},
		{"queued message after new, stale done of another job", contract.UserState{State: contract.StateWorking, JobID: jobJ, Settings: contract.Settings{NewSession: true}},
			Input{Kind: Done, ID: jobJ, QueueHead: headQ}, Input{Kind: Done, ID: jobX}},
		{"approve, stale done of the approved job", contract.UserState{State: contract.StateAwaitingApproval, JobID: jobJ},
			Input{Kind: Keyword, Keyword: Approve, ID: kwK}, Input{Kind: Done, ID: jobJ, Approval: true}},
		{"reject, stale done of another job", contract.UserState{State: contract.StateAwaitingApproval, JobID: jobJ},
			Input{Kind: Keyword, Keyword: Reject, ID: kwK}, Input{Kind: Done, ID: jobX}},
		{"approve, redelivered", contract.UserState{State: contract.StateAwaitingApproval, JobID: jobJ},
			Input{Kind: Keyword, Keyword: Approve, ID: kwK}, Input{Kind: Keyword, Keyword: Approve, ID: kwK}},
		{"reject, redelivered", contract.UserState{State: contract.StateAwaitingApproval, JobID: jobJ},
			Input{Kind: Keyword, Keyword: Reject, ID: kwK}, Input{Kind: Keyword, Keyword: Reject, ID: kwK}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, eff := Step(c.from, c.first)
			first := startOf(eff)
			if first == nil {
				t.Fatalf("Step(%s, %s): got %s; want a Start", fmtSnap(c.from), fmtInput(c.first), fmtEffects(eff))
			}
			s2, eff2 := Step(s, c.again)
			if !reflect.DeepEqual(s2, s) {
				t.Errorf("Step(%s, %s): got state %s; want it unchanged", fmtSnap(s), fmtInput(c.again), fmtSnap(s2))
			}
			again := startOf(eff2)
			if again == nil || again.ID != first.ID || again.Action != first.Action || again.NewSession != first.NewSession {
				t.Errorf("Step(%s, %s): got %s; want the first start again: %s",
					fmtSnap(s), fmtInput(c.again), fmtEffects(eff2), fmtEffects([]Effect{*first}))
			}
		})
	}
}

func startOf(effs []Effect) *Effect {
	for i := range effs {
		if effs[i].Kind == Start {
			return &effs[i]
		}
	}
	return nil
}

// The model-checking fuzz test.
//
// Each byte of the input is one event in a small simulated world around the
// machine: the broker's queue (at most queueLimit messages, deduplicated by
// message id), the runner (jobs started and not yet done; a Start of a job
// ever started before is deduplicated by the broker), and the approval
// timer. The world is also the caller: like the dispatcher (its Finished
// list), it drops redeliveries of messages whose run has ended or that a
// cancel cleared, since the machine does not look them up.

const queueLimit = 5 // contract.QueueLimit

const maxEvents = 400

// Fuzz events: byte%numOps is the event, byte/numOps its parameter.
const (
	opNew       = iota // a message with a fresh id
	opRedeliver        // an old message again
	opCancel           // keywords, opCancel..opHelp, in the order of fuzzKeywords
	opApprove
	opReject
	opStatus
	opMore
	opNewKeyword
	opHelp
	opDone         // the running job ends
	opDoneApproval // the running job ends with changes to approve
	opStaleDone    // a job that ended before ends again
	opTimer        // the armed approval timer fires
	opStaleTimeout // a timeout of a job that is not awaiting approval
	opKick
	opNew2        // a second weight for new messages
	opQuestion    // the running job asks a question
	opQTimer      // the armed question timer fires
	opStaleQ      // a question of an ended job, or asked before
	opMode        // mode auto, ask or plan (by parameter)
	opGo          // go
	opBtw         // btw …
	opSteerToggle // steer on / steer off
	numOps
)

var fuzzKeywords = []string{Cancel, Approve, Reject, Status, More, New, Help}

type world struct {
	t testing.TB
	s contract.UserState

	queue    []string
	enqueued map[string]bool // ever accepted into the queue: the broker's dedup
	accepted []string        // in order
	refused  map[string]bool // refused because the queue was full
	cleared  map[string]bool // dropped by ClearQueue

	started  map[string]bool // ever really started: the broker's dedup
	running  []string
	ended    map[string]bool // run finished or cancelled
	finished []string        // the same, in order

	messages  map[string]bool // message (not keyword) ids
	delivered []string        // message ids, in arrival order
	rank      map[string]int  // order in which messages were admitted
	nextRank  int
	lastRank  int // rank of the last message job started

	timer   string // job whose approval timer is armed, "" if none
	wantNew bool   // the person sent new: the next message job starts a new session

	asked    map[string]int // per job, the questions it asked
	pending  int            // the running job's question waiting for an answer, 0 if none
	qtimer   int            // the question whose timer is armed, 0 if none
	consumed map[string]bool
	mode     string // the person's mode, and the mode go uses
	usual    string
	steer    bool
	cur      string // the id of the input being stepped

	nextID int
	steps  int
	trace  []traceEntry
}

func newWorld(t testing.TB) *world {
	return &world{
		t: t, s: contract.UserState{State: contract.StateIdle},
		enqueued: map[string]bool{}, refused: map[string]bool{}, cleared: map[string]bool{},
		started: map[string]bool{}, ended: map[string]bool{},
		messages: map[string]bool{}, rank: map[string]int{}, lastRank: -1,
		asked: map[string]int{}, consumed: map[string]bool{},
	}
}

func (w *world) fail(format string, args ...any) {
	w.t.Helper()
	lines := make([]string, len(w.trace))
	for i, e := range w.trace {
		lines[i] = e.String()
	}
	w.t.Fatalf("%s\ntrace:\n%s", fmt.Sprintf(format, args...), strings.Join(lines, "\n"))
}

// traceEntry is one line of the trace, formatted only when a test fails.
type traceEntry struct {
	step       int // 0: a note
	in         Input
	from, next contract.UserState
	effs       []Effect
	note, id   string
}

func (e traceEntry) String() string {
	if e.step == 0 {
		return fmt.Sprintf("     %s %s", e.note, e.id)
	}
	return fmt.Sprintf("%3d  %-30s %-26s → %-26s %s", e.step, fmtInput(e.in), fmtSnap(e.from), fmtSnap(e.next), fmtEffects(e.effs))
}

func (w *world) note(note, id string) {
	w.trace = append(w.trace, traceEntry{note: note, id: id})
}

func (w *world) fresh(prefix string) string {
	w.nextID++
	return fmt.Sprintf("%s%04d", prefix, w.nextID)
}

func (w *world) admit(id string) {
	if _, ok := w.rank[id]; !ok {
		w.rank[id] = w.nextRank
		w.nextRank++
	}
}

func (w *world) event(b byte) {
	w.t.Helper()
	op, p := int(b%numOps), int(b/numOps)
	switch op {
	case opNew, opNew2:
		id := w.fresh("m")
		w.messages[id] = true
		w.delivered = append(w.delivered, id)
		w.step(Input{Kind: Message, ID: id, Text: []string{"hi", "yes", "no, use pnpm", "always"}[p%4]})
	case opRedeliver:
		if len(w.delivered) == 0 {
			return
		}
		id := w.delivered[p%len(w.delivered)]
		if w.ended[id] || w.cleared[id] {
			w.note("redelivery dropped by the caller (ended or cleared):", id)
			return
		}
		w.step(Input{Kind: Message, ID: id, Text: "again"})
	case opCancel, opApprove, opReject, opStatus, opMore, opNewKeyword, opHelp:
		k := fuzzKeywords[op-opCancel]
		if k == New {
			w.wantNew = true
		}
		w.step(Input{Kind: Keyword, Keyword: k, ID: w.fresh("k")})
	case opDone, opDoneApproval:
		if len(w.running) == 0 {
			return
		}
		id := w.running[0]
		w.end(id)
		w.step(Input{Kind: Done, ID: id, Approval: op == opDoneApproval})
	case opStaleDone:
		if len(w.finished) == 0 {
			return
		}
		w.step(Input{Kind: Done, ID: w.finished[(p/2)%len(w.finished)], Approval: p%2 == 1})
	case opTimer:
		if w.timer == "" {
			return
		}
		id := w.timer
		w.timer = ""
		w.step(Input{Kind: Timeout, ID: id})
	case opStaleTimeout:
		var old []string
		for _, id := range w.finished {
			if id != w.timer {
				old = append(old, id)
			}
		}
		if len(old) == 0 {
			return
		}
		w.step(Input{Kind: Timeout, ID: old[p%len(old)]})
	case opKick:
		w.step(Input{Kind: Kick})
	case opQuestion:
		if len(w.running) == 0 || w.pending != 0 {
			return
		}
		id := w.running[0]
		w.asked[id]++
		w.pending = w.asked[id]
		w.step(Input{Kind: Question, ID: id, Question: w.pending})
	case opQTimer:
		if w.qtimer == 0 || len(w.running) == 0 {
			return
		}
		q := w.qtimer
		w.qtimer = 0
		w.step(Input{Kind: Timeout, ID: w.running[0], Question: q})
	case opStaleQ:
		for id, n := range w.asked {
			if w.ended[id] || (n > 0 && !(len(w.running) > 0 && w.running[0] == id && w.pending == n)) {
				w.step(Input{Kind: Question, ID: id, Question: max(1, n-p%2)})
				return
			}
		}
	case opMode:
		m := []string{contract.ModeAuto, contract.ModeAsk, contract.ModePlan}[p%3]
		w.mode = m
		if m != contract.ModePlan {
			w.usual = m
		}
		w.step(Input{Kind: Keyword, Keyword: Mode, Arg: m, ID: w.fresh("k")})
	case opGo, opBtw:
		// Either may turn out to be a message.
		id := w.fresh("g")
		w.messages[id] = true
		kw, arg := Go, ""
		if op == opBtw {
			kw, arg = Btw, "also this"
		}
		w.step(Input{Kind: Keyword, Keyword: kw, Arg: arg, Text: kw + " " + arg, ID: id})
	case opSteerToggle:
		w.steer = !w.steer
		arg := map[bool]string{true: "on", false: "off"}[w.steer]
		w.step(Input{Kind: Keyword, Keyword: Steer, Arg: arg, ID: w.fresh("k")})
	}
}

func (w *world) end(id string) {
	i := slices.Index(w.running, id)
	if i < 0 {
		return
	}
	w.running = slices.Delete(w.running, i, i+1)
	w.ended[id] = true
	w.finished = append(w.finished, id)
	w.pending = 0
}

func (w *world) step(in Input) {
	w.t.Helper()
	if len(w.queue) > 0 {
		in.QueueHead = w.queue[0]
	}
	from := w.s
	w.cur = in.ID
	next, effs := Step(from, in)
	w.steps++
	w.trace = append(w.trace, traceEntry{step: w.steps, in: in, from: from, next: next, effs: effs})
	w.s = next
	for _, e := range effs {
		w.apply(from, e)
	}
	w.check()
}

func (w *world) apply(from contract.UserState, e Effect) {
	w.t.Helper()
	switch e.Kind {
	case Start:
		if e.Dequeue && len(w.queue) > 0 && w.queue[0] == e.ID {
			w.queue = w.queue[1:]
		}
		if w.started[e.ID] {
			w.note("Start deduplicated:", e.ID)
			return
		}
		if len(w.running) > 0 {
			w.fail("two jobs at once: %s starts while %v runs", e.ID, w.running)
		}
		w.started[e.ID] = true
		w.running = append(w.running, e.ID)
		if e.Action == Go {
			if from.State != contract.StateIdle || from.Mode != contract.ModePlan || e.Mode != w.usual || e.NewSession {
				w.fail("go %s from %s mode %q: mode %q new %v; want from idle in plan mode, mode %q, same session",
					e.ID, fmtSnap(from), from.Mode, e.Mode, e.NewSession, w.usual)
			}
			return
		}
		if e.Action != "" {
			if e.Action != Approve && e.Action != Reject {
				w.fail("start of %s with action %q", e.ID, e.Action)
			}
			if from.State != contract.StateAwaitingApproval {
				w.fail("start of %s with action %s from %s; want only from awaiting_approval", e.ID, e.Action, fmtSnap(from))
			}
			if e.NewSession {
				w.fail("start of %s with action %s in a new session; want the session of the changes", e.ID, e.Action)
			}
			return
		}
		if !w.messages[e.ID] {
			w.fail("start of %s, which is no message", e.ID)
		}
		w.admit(e.ID)
		if r := w.rank[e.ID]; r < w.lastRank {
			w.fail("message %s starts after a message that came after it", e.ID)
		} else {
			w.lastRank = r
		}
		if e.NewSession != w.wantNew {
			w.fail("start of %s with NewSession %v; want %v", e.ID, e.NewSession, w.wantNew)
		}
		if e.Mode != w.mode {
			w.fail("start of %s in mode %q; the person's is %q", e.ID, e.Mode, w.mode)
		}
		w.wantNew = false
	case Enqueue:
		if !w.messages[e.ID] {
			w.fail("enqueue of %s, which is no message", e.ID)
		}
		switch {
		case w.enqueued[e.ID]:
			w.note("Enqueue deduplicated:", e.ID)
		case len(w.queue) >= queueLimit:
			w.note("Enqueue refused, queue full:", e.ID)
			w.refused[e.ID] = true
		default:
			w.enqueued[e.ID] = true
			w.queue = append(w.queue, e.ID)
			w.accepted = append(w.accepted, e.ID)
			w.admit(e.ID)
		}
	case Notice:
		if e.Text == "" {
			w.fail("empty notice")
		}
	case ClearQueue:
		for _, id := range w.queue {
			w.cleared[id] = true
		}
		w.queue = nil
	case CancelRun:
		w.end(e.ID)
	case ScheduleTimeout:
		if e.Question > 0 {
			if w.qtimer != 0 || e.Question != w.pending || len(w.running) == 0 || e.ID != w.running[0] {
				w.fail("question timer %s/%d armed; armed %d, pending %d, running %v", e.ID, e.Question, w.qtimer, w.pending, w.running)
			}
			w.qtimer = e.Question
			return
		}
		if w.timer != "" {
			w.fail("timer of %s armed while the one of %s is", e.ID, w.timer)
		}
		w.timer = e.ID
	case CancelTimeout:
		if e.Question > 0 {
			if w.qtimer != e.Question {
				w.fail("cancel of question timer %d; armed %d", e.Question, w.qtimer)
			}
			w.qtimer = 0
			return
		}
		if w.timer != e.ID {
			w.fail("cancel of the timer of %s; armed: %q", e.ID, w.timer)
		}
		w.timer = ""
	case Answer:
		if w.pending == 0 || e.Question != w.pending || len(w.running) == 0 || e.ID != w.running[0] {
			w.fail("answer to %s/%d; pending %d of %v", e.ID, e.Question, w.pending, w.running)
		}
		if e.Answer == contract.AnswerDeny && e.Text == "" {
			w.fail("a denial without a text for the agent")
		}
		w.pending = 0
		w.consumed[w.cur] = true
	case SteerRun:
		if len(w.running) == 0 || e.ID != w.running[0] || e.Text == "" {
			w.fail("steer of %s with %q while %v runs", e.ID, e.Text, w.running)
		}
		w.consumed[w.cur] = true
	case ReportStatus, NextPage, TimedOut:
	default:
		w.fail("unknown effect %d", e.Kind)
	}
}

// check the invariants that hold after every step.
func (w *world) check() {
	w.t.Helper()
	s := w.s
	if len(w.queue) > queueLimit {
		w.fail("queue of %d; limit %d", len(w.queue), queueLimit)
	}
	if len(w.running) > 1 {
		w.fail("jobs %v run at once", w.running)
	}
	switch s.State {
	case contract.StateIdle:
		if s.JobID != "" {
			w.fail("idle with job %s", s.JobID)
		}
		if len(w.running) != 0 {
			w.fail("idle while %v runs", w.running)
		}
		if len(w.queue) != 0 {
			w.fail("idle while %v wait", w.queue)
		}
	case contract.StateWorking:
		if len(w.running) != 1 || w.running[0] != s.JobID {
			w.fail("working on %s while %v runs", s.JobID, w.running)
		}
		if w.pending != 0 {
			w.fail("working while question %d waits", w.pending)
		}
	case contract.StateAwaitingPermission:
		if len(w.running) != 1 || w.running[0] != s.JobID {
			w.fail("awaiting permission for %s while %v runs", s.JobID, w.running)
		}
		if w.pending == 0 || w.pending != s.Question || w.qtimer != s.Question {
			w.fail("awaiting an answer to %d; pending %d, timer %d", s.Question, w.pending, w.qtimer)
		}
	case contract.StateAwaitingApproval:
		if len(w.running) != 0 {
			w.fail("awaiting approval of %s while %v runs", s.JobID, w.running)
		}
		if !w.ended[s.JobID] {
			w.fail("awaiting approval of %s, which never ran", s.JobID)
		}
		if w.timer != s.JobID {
			w.fail("awaiting approval of %s; armed timer %q", s.JobID, w.timer)
		}
	default:
		w.fail("unknown state %q", s.State)
	}
	if s.State != contract.StateAwaitingApproval && w.timer != "" {
		w.fail("%s with the timer of %s armed", s.State, w.timer)
	}
	if s.State != contract.StateAwaitingPermission && w.qtimer != 0 {
		w.fail("%s with the question timer %d armed", s.State, w.qtimer)
	}
	if s.Mode != w.mode || s.Usual != w.usual || s.Steer != w.steer {
		w.fail("settings %q %q %v; want %q %q %v", s.Mode, s.Usual, s.Steer, w.mode, w.usual, w.steer)
	}
	for _, id := range w.queue {
		if w.started[id] {
			w.fail("%s waits in the queue but started already", id)
		}
	}
}

// drain ends every run and answers every approval until the user is idle
// with nothing waiting, then checks that no message got lost.
func (w *world) drain() {
	w.t.Helper()
	w.note("drain", "")
	for i := 0; ; i++ {
		if i > 100 {
			w.fail("not idle after %d drain steps", i)
		}
		switch w.s.State {
		case contract.StateWorking:
			w.event(opDone)
		case contract.StateAwaitingPermission:
			if i%2 == 0 {
				w.event(opNew)
			} else {
				w.event(opQTimer)
			}
		case contract.StateAwaitingApproval:
			if i%2 == 0 {
				w.event(opApprove)
			} else {
				w.event(opTimer)
			}
		case contract.StateIdle:
			if len(w.queue) == 0 {
				w.finish()
				return
			}
			w.event(opKick)
		}
	}
}

func (w *world) finish() {
	w.t.Helper()
	if len(w.running) != 0 || w.timer != "" {
		w.fail("drained: %v running, timer %q", w.running, w.timer)
	}
	for _, id := range w.accepted {
		if !w.started[id] && !w.cleared[id] {
			w.fail("message %s was queued but never started nor cleared", id)
		}
	}
	for _, id := range w.delivered {
		if !w.started[id] && !w.cleared[id] && !w.refused[id] && !w.consumed[id] {
			w.fail("message %s was neither started, cleared, refused, an answer nor added to a run", id)
		}
	}
}

// ops encodes events for the seed corpus; an element op+numOps*p is op with
// parameter p.
func ops(events ...int) []byte {
	b := make([]byte, len(events))
	for i, e := range events {
		b[i] = byte(e)
	}
	return b
}

func FuzzStep(f *testing.F) {
	p := func(op, param int) int { return op + numOps*param }
	for _, seed := range [][]byte{
		// The queue fills up; the seventh message is refused; all drain.
		ops(opNew, opNew, opNew, opNew, opNew, opNew, opNew, opDone, opDone, opDone, opDone, opDone, opDone, opDone),
		// Refused, then redelivered when there is room.
		ops(opNew, opNew, opNew, opNew, opNew, opNew, opNew, opDone, p(opRedeliver, 6), opDone, opDone),
		// Approve with messages waiting.
		ops(opNew, opNew, opDoneApproval, opNew, opApprove, opStatus, opDone, opDone, opDone),
		// Reject, and its job asks for approval again.
		ops(opNew, opDoneApproval, opReject, opDoneApproval, opApprove, opDone),
		// Timeout with messages waiting, then a stale timeout.
		ops(opNew, opNew, opDoneApproval, opTimer, opStaleTimeout, opDone),
		// Cancel a run with messages waiting; the cancelled run's done comes late.
		ops(opNew, opNew, opNew, opCancel, opNew, opStaleDone, p(opStaleDone, 1), opDone),
		// Cancel an approval; stale timeouts and dones.
		ops(opNew, opNew, opDoneApproval, opCancel, opStaleTimeout, opNew, opDoneApproval, opStaleTimeout, opStaleDone, opTimer),
		// A new session, with a queued message and around an approval.
		ops(opNew, opNewKeyword, opNew, opDone, opDone, opNewKeyword, opNew, opDoneApproval, opApprove, opDone, opNew),
		// Redeliveries of running, queued, finished and cleared messages.
		ops(opNew, opRedeliver, opNew, p(opRedeliver, 1), opDone, opRedeliver, p(opRedeliver, 1), opCancel, p(opRedeliver, 1), opNew, opRedeliver),
		// Keywords in the wrong states.
		ops(opApprove, opReject, opCancel, opStatus, opMore, opHelp, opNew, opApprove, opReject, opDoneApproval, opStatus, opMore, opHelp, opNew),
		// Kicks everywhere.
		ops(opKick, opNew, opKick, opNew, opDoneApproval, opKick, opTimer, opKick, opDone, opKick),
		// An approve job that leaves changes again, then cancel.
		ops(opNew, opDoneApproval, opApprove, opNew, opDoneApproval, opCancel, opNew, opDone),
		// Questions answered, timed out, asked again, cancelled while waiting.
		ops(opNew, opQuestion, opNew, opQuestion, opQTimer, opStaleQ, opQuestion, opCancel, opStaleQ, opNew, opQuestion, opDone),
		// Plan mode and go; steering on and off; btw when idle and working.
		ops(p(opMode, 2), opNew, opGo, opDone, opGo, opBtw, opQuestion, opBtw, opNew, opSteerToggle, opNew, opDone, opBtw, p(opMode, 1), opGo),
	} {
		f.Add(seed)
	}
	r := rand.New(rand.NewPCG(2, 3))
	for range 200 {
		b := make([]byte, 60)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, events []byte) {
		if len(events) > maxEvents {
			// Longer runs find nothing more, and make every exec and the
			// minimization of every new input slow.
			return
		}
		w := newWorld(t)
		for _, b := range events {
			w.event(b)
		}
		w.drain()
	})
}

// Formatting for failure messages.

var effectNames = map[EffectKind]string{
	Start: "Start", Enqueue: "Enqueue", Notice: "Notice", ClearQueue: "ClearQueue", CancelRun: "CancelRun",
	ScheduleTimeout: "ScheduleTimeout", CancelTimeout: "CancelTimeout", ReportStatus: "ReportStatus", NextPage: "NextPage",
	Answer: "Answer", SteerRun: "SteerRun", TimedOut: "TimedOut",
}

var inputNames = map[InputKind]string{Message: "message", Keyword: "keyword", Done: "done", Timeout: "timeout", Kick: "kick", Question: "question"}

func fmtSnap(s contract.UserState) string {
	out := s.State
	if s.JobID != "" {
		out += "(" + s.JobID + ")"
	}
	if s.NewSession {
		out += "+new"
	}
	return out
}

func fmtInput(in Input) string {
	name, ok := inputNames[in.Kind]
	if !ok {
		name = fmt.Sprintf("input%d", in.Kind)
	}
	out := name
	if in.Keyword != "" {
		out += " " + in.Keyword
	}
	if in.ID != "" {
		out += " " + in.ID
	}
	if in.Approval {
		out += " approval"
	}
	if in.Question > 0 {
		out += fmt.Sprintf(" q%d", in.Question)
	}
	if in.QueueHead != "" {
		out += " head=" + in.QueueHead
	}
	return out
}

func fmtEffects(effs []Effect) string {
	parts := make([]string, len(effs))
	for i, e := range effs {
		name, ok := effectNames[e.Kind]
		if !ok {
			name = fmt.Sprintf("effect%d", e.Kind)
		}
		var args []string
		if e.ID != "" {
			args = append(args, e.ID)
		}
		if e.Action != "" {
			args = append(args, "action="+e.Action)
		}
		if e.NewSession {
			args = append(args, "new")
		}
		if e.Dequeue {
			args = append(args, "dequeue")
		}
		if e.Question > 0 {
			args = append(args, fmt.Sprintf("q%d", e.Question))
		}
		if e.Mode != "" || e.Answer != "" {
			args = append(args, e.Mode+e.Answer)
		}
		if e.Text != "" {
			text := e.Text
			if r := []rune(text); len(r) > 24 {
				text = string(r[:24]) + "…"
			}
			args = append(args, fmt.Sprintf("%q", text))
		}
		parts[i] = name + "(" + strings.Join(args, " ") + ")"
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// FuzzParseKeyword: whatever a person sends, a keyword is only ever one of
// the keywords (those with an argument: the first word), recognised in any case and with any surrounding space, and
// everything else is a message for the agent.
func FuzzParseKeyword(f *testing.F) {
	for _, s := range []string{"cancel", " APPROVE\n", "Reject", "status?", "more more", "new\u00a0", "help", "", "\u212aancel", "at 6pm x", "in 2h x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		k, arg, ok := ParseKeyword(text)
		want := strings.ToLower(strings.TrimSpace(text))
		if ok && (arg != "" || k == Mode || k == Steer) {
			first, _, _ := strings.Cut(want, " ")
			if first = strings.TrimRight(first, ":,"); k == At && first == "in" {
				first = At // "in 2h <task>" is an at
			}
			if first != k || !slices.Contains([]string{Mode, Steer, Branches, Btw, At, Every, Unschedule, Zone, Revoke, Use, Clone}, k) {
				t.Fatalf("ParseKeyword(%q) = %q %q: not that keyword with an argument", text, k, arg)
			}
			return
		}
		switch {
		case ok && !slices.Contains(keywords, k):
			t.Fatalf("ParseKeyword(%q) = %q: not a keyword", text, k)
		case ok && k != want:
			t.Fatalf("ParseKeyword(%q) = %q; want %q", text, k, want)
		case !ok && slices.Contains(keywords, want):
			t.Fatalf("ParseKeyword(%q) missed keyword %q", text, want)
		}
	})
}

// help reads on a phone's narrow screen (and in WhatsApp or SMS, the same
// text): one keyword a line, said after a dash, no columns of spaces that
// break apart when a line wraps.
func TestHelpReadsOnAPhone(t *testing.T) {
	for i, line := range strings.Split(MsgHelp, "\n") {
		if strings.HasPrefix(line, " ") || strings.Contains(line, "  ") {
			t.Errorf("help line %d %q: aligned with spaces; want one keyword a line, as `status — what is happening`", i+1, line)
		}
	}
	for _, kw := range []string{"status", "cost", "cancel", "approve", "reject", "more", "new", "mode", "go", "help"} {
		if !strings.Contains(MsgHelp, "\n"+kw+" — ") {
			t.Errorf("help has no line `%s — …`", kw)
		}
	}
}
