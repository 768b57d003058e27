package dispatcher_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
	"github.com/textslash/textslash/natstest"
)

// bench is a provisioned embedded JetStream server with one dispatcher,
// which a test may stop and start again, and a simulated runner: it takes
// every job from JOBS with the runner's durable consumer and records it;
// the test itself publishes what the run does (started, progress, done).
type bench struct {
	*harness
	srv  *natstest.Server
	cfg  dispatcher.Config
	log  zerolog.Logger
	stop func() // stops the running dispatcher; nil when none runs

	mu     sync.Mutex
	ran    []contract.Job    // every job the simulated runner took, in order
	traces map[string]string // the trace header of each job it took, by Nats-Msg-Id
	errs   []string          // what the simulated runner could not read
}

func newBench(t *testing.T, cfg dispatcher.Config) *bench {
	t.Helper()
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	if err := bus.Provision(ctx, s.JS, bus.Options{}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	users, err := s.JS.KeyValue(ctx, contract.BucketUsers)
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{
		harness: &harness{t: t, js: s.JS, users: users},
		srv:     s,
		cfg:     cfg,
		log:     zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
		traces:  map[string]string{},
	}
	cons, err := s.JS.Consumer(ctx, contract.StreamJobs, contract.ConsumerRunner)
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var job contract.Job
		err := contract.Decode(m.Data(), &job)
		b.mu.Lock()
		if err != nil {
			b.errs = append(b.errs, fmt.Sprintf("job %q: %v", m.Data(), err))
		} else {
			b.ran = append(b.ran, job)
			b.traces[m.Headers().Get(contract.HeaderMsgID)] = bus.Trace(m.Headers())
		}
		b.mu.Unlock()
		_ = m.Ack()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Stop()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errs {
			t.Errorf("simulated runner: %s", e)
		}
	})
	b.startDispatcher()
	t.Cleanup(b.stopDispatcher)
	return b
}

// startDispatcher runs a new Dispatcher, on a connection of its own.
func (b *bench) startDispatcher() {
	b.t.Helper()
	nc, err := nats.Connect(b.srv.ClientURL())
	if err != nil {
		b.t.Fatalf("connect: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		b.t.Fatal(err)
	}
	d, err := dispatcher.New(b.cfg, js, b.log)
	if err != nil {
		b.t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- d.Run(ctx) }()
	b.stop = func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				b.t.Errorf("Run: got %v; want nil after cancel", err)
			}
		case <-time.After(30 * time.Second):
			b.t.Errorf("Run did not return 30s after its context ended")
		}
		nc.Close()
	}
}

// stopDispatcher cancels the dispatcher's context and waits for Run to return.
func (b *bench) stopDispatcher() {
	if b.stop != nil {
		b.stop()
		b.stop = nil
	}
}

// jobsOf are the jobs of u the simulated runner took.
func (b *bench) jobsOf(u contract.User) []contract.Job {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []contract.Job
	for _, j := range b.ran {
		if j.User == u {
			out = append(out, j)
		}
	}
	return out
}

// waitRan waits until the runner has taken exactly the jobs ids of u, in order.
func (b *bench) waitRan(u contract.User, ids ...string) {
	b.t.Helper()
	natstest.CheckFor(b.t, wait, poll, func() error {
		if got := jobIDs(b.jobsOf(u)); !slices.Equal(got, ids) {
			st, _ := b.state(u)
			return fmt.Errorf("jobs of %s: got %q; want %q (state %s job %q, queue %q)", u, got, ids, st.State, st.JobID, b.queued(u))
		}
		return nil
	})
}

// job is the job id of u the runner took, once it has: the dispatcher
// has published it when say returns, but the simulated runner's consumer
// may not have received it yet.
func (b *bench) job(u contract.User, id string) contract.Job {
	b.t.Helper()
	var job contract.Job
	natstest.CheckFor(b.t, wait, poll, func() error {
		for _, j := range b.jobsOf(u) {
			if j.ID == id {
				job = j
				return nil
			}
		}
		return fmt.Errorf("job %s of %s: not taken by the runner", id, u)
	})
	return job
}

// event publishes an event of a run the way the runner does.
func (b *bench) event(ev contract.Event, ref ...string) {
	b.t.Helper()
	id := contract.MsgID(ev.User, ev.JobID, append([]string{string(ev.Kind)}, ref...)...)
	if err := bus.PublishEvent(b.t.Context(), b.js, ev, id); err != nil {
		b.t.Fatalf("publish %s event of %s: %v", ev.Kind, ev.JobID, err)
	}
}

// finish publishes the done event of job id, asking for approval if
// approval, and waits until the dispatcher has handled it.
func (b *bench) finish(u contract.User, id string, approval bool) {
	b.t.Helper()
	b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: id, Status: contract.StatusOK, Text: "ok", Approval: approval})
	st, err := b.js.Stream(b.t.Context(), contract.StreamEvents)
	if err != nil {
		b.t.Fatal(err)
	}
	raw, err := st.GetLastMsgForSubject(b.t.Context(), contract.EventSubject(u, contract.KindDone))
	if err != nil {
		b.t.Fatal(err)
	}
	b.doneHandled(raw.Sequence)
}

// say sends text as message id, waits until the dispatcher has handled it
// and returns the notices it answered it with.
func (b *bench) say(u contract.User, id, text string) []string {
	b.t.Helper()
	b.inboundHandled(b.send(u, id, text))
	return b.noticesOf(u, id)
}

// noticesOf are the texts of u's notices about message id.
func (b *bench) noticesOf(u contract.User, id string) []string {
	var out []string
	for _, ev := range b.events(u, contract.KindNotice) {
		if ev.JobID == id {
			out = append(out, ev.Text)
		}
	}
	return out
}

// schedules are the approval timeouts of u armed in TIMERS.
func (b *bench) schedules(u contract.User) []contract.Timer {
	b.t.Helper()
	var out []contract.Timer
	for _, m := range b.raw(contract.StreamTimers, contract.ApprovalScheduleSubject(u)) {
		var tm contract.Timer
		if err := contract.Decode(m.Data, &tm); err != nil {
			b.t.Fatalf("schedule: %v", err)
		}
		out = append(out, tm)
	}
	return out
}

// cancels subscribes, on core NATS, to what the dispatcher tells runners
// to cancel for u.
func (b *bench) cancels(u contract.User) chan *nats.Msg {
	b.t.Helper()
	ch := make(chan *nats.Msg, 16)
	sub, err := b.srv.NC.ChanSubscribe(contract.CancelSubject(u), ch)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := b.srv.NC.Flush(); err != nil {
		b.t.Fatal(err)
	}
	return ch
}

// noCancel checks that no cancel was sent: call it after the input that
// might have sent one was handled (the dispatcher publishes before it
// acknowledges, and the flush's reply comes after any message routed to us).
func (b *bench) noCancel(ch chan *nats.Msg) {
	b.t.Helper()
	if err := b.srv.NC.Flush(); err != nil {
		b.t.Fatal(err)
	}
	select {
	case m := <-ch:
		b.t.Errorf("cancel on %s: got %q; want none", m.Subject, m.Data)
	default:
	}
}

// newUser is the state of a user the dispatcher has never seen.
const newUser = ""

// into brings u into state: idle after a run (w0), working on w1, or
// awaiting approval of w1's changes.
func (b *bench) into(u contract.User, state string) {
	b.t.Helper()
	switch state {
	case newUser:
	case contract.StateIdle:
		b.say(u, "w0", "echo w0")
		b.waitRan(u, "w0")
		b.finish(u, "w0", false)
		b.waitState(u, contract.StateIdle, "")
	case contract.StateWorking:
		b.say(u, "w1", "sleep 100")
		b.waitRan(u, "w1")
		b.waitState(u, contract.StateWorking, "w1")
	case contract.StateAwaitingApproval:
		b.into(u, contract.StateWorking)
		b.finish(u, "w1", true)
		b.waitState(u, contract.StateAwaitingApproval, "w1")
	default:
		b.t.Fatalf("into %q: no such state", state)
	}
}

var allStates = []string{newUser, contract.StateIdle, contract.StateWorking, contract.StateAwaitingApproval}

func stateName(s string) string {
	if s == newUser {
		return "new user"
	}
	return s
}

// snapshot is what a keyword that changes nothing must leave as it was.
type snapshot struct {
	st     contract.UserState
	rev    uint64
	jobs   []string
	queue  []string
	states []string
}

func (b *bench) snapshot(u contract.User) snapshot {
	st, rev := b.state(u)
	return snapshot{st, rev, jobIDs(b.jobsOf(u)), b.queued(u), b.transitions(u)}
}

// unchanged checks that u's state, jobs, queue and state events are what
// they were in before. The state's InSeq is left out: every message
// routed moves it on.
func (b *bench) unchanged(u contract.User, before snapshot) {
	b.t.Helper()
	now := b.snapshot(u)
	if !sameState(now.st, before.st) {
		b.t.Errorf("state: got %+v (rev %d); want %+v (rev %d)", now.st, now.rev, before.st, before.rev)
	}
	if !slices.Equal(now.jobs, before.jobs) {
		b.t.Errorf("jobs: got %q; want %q", now.jobs, before.jobs)
	}
	if !slices.Equal(now.queue, before.queue) {
		b.t.Errorf("queue: got %q; want %q", now.queue, before.queue)
	}
	if !slices.Equal(now.states, before.states) {
		b.t.Errorf("state events: got %q; want %q", now.states, before.states)
	}
}

// timedOut reports whether a notice is the approval timeout's.
func timedOut(text string) bool { return strings.HasPrefix(text, "No answer to the approval request") }

func TestKeywordHelpAndMoreInEveryState(t *testing.T) {
	for _, state := range allStates {
		t.Run(stateName(state), func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			b.into(u, state)
			before := b.snapshot(u)

			if got, want := b.say(u, "h1", "help"), []string{fsm.MsgHelp}; !slices.Equal(got, want) {
				t.Errorf("help: got notices %q; want %q", got, want)
			}
			if got := b.say(u, "p1", "more"); len(got) != 0 {
				t.Errorf("more: got notices %q; want none (the channel answers)", got)
			}
			var more []string
			for _, ev := range b.events(u, contract.KindMore) {
				more = append(more, ev.JobID)
			}
			if want := []string{"p1"}; !slices.Equal(more, want) {
				t.Errorf("more events on %s: got job ids %q; want %q", contract.EventSubject(u, contract.KindMore), more, want)
			}
			b.unchanged(u, before)
		})
	}
}

func TestKeywordStatus(t *testing.T) {
	tests := []struct {
		name  string
		setup func(b *bench, u contract.User)
		exact string   // the whole notice, when set
		want  []string // parts of it
		not   []string // what it must not say
	}{
		{name: "new user", exact: "Idle: nothing is running.\nMode: ask."},
		{
			name:  "idle",
			setup: func(b *bench, u contract.User) { b.into(u, contract.StateIdle) },
			exact: "Idle: nothing is running.\nMode: ask.",
		},
		{
			name: "a mode chosen, steering on",
			setup: func(b *bench, u contract.User) {
				b.say(u, "m1", "mode plan")
				b.say(u, "m2", "steer on")
			},
			exact: "Idle: nothing is running.\nMode: plan. Messages sent while working are added to the run.",
		},
		{
			name: "waiting for an answer",
			setup: func(b *bench, u contract.User) {
				b.say(u, "w1", "echo w1")
				b.event(contract.Event{Kind: contract.KindQuestion, User: u, JobID: "w1", Question: 1,
					Text: "Claude wants to run `rm -rf build` in your workspace. " + contract.QuestionPrompt}, "1")
				b.waitState(u, contract.StateAwaitingPermission, "w1")
			},
			want: []string{"Claude is waiting for your answer (for ", "):\nClaude wants to run `rm -rf build`", "\nMode: ask."},
			not:  []string{"Working", "Idle"},
		},
		{
			name: "working",
			setup: func(b *bench, u contract.User) {
				b.into(u, contract.StateWorking)
				b.event(contract.Event{Kind: contract.KindStarted, User: u, JobID: "w1", Text: "“sleep 100”"})
				b.event(contract.Event{Kind: contract.KindProgress, User: u, JobID: "w1", Text: "reading files"}, "1")
				b.event(contract.Event{Kind: contract.KindProgress, User: u, JobID: "w1", Text: "compiling"}, "2")
			},
			want: []string{"Working for ", " on: “sleep 100”.", "\nLast step: compiling ("},
			not:  []string{"reading files", "waiting"},
		},
		{
			name: "working, two waiting",
			setup: func(b *bench, u contract.User) {
				b.into(u, contract.StateWorking)
				b.event(contract.Event{Kind: contract.KindStarted, User: u, JobID: "w1", Text: "“sleep 100”"})
				b.event(contract.Event{Kind: contract.KindProgress, User: u, JobID: "w1", Text: "compiling"}, "1")
				b.say(u, "q1", "echo q1")
				b.say(u, "q2", "echo q2")
			},
			want: []string{"Working for ", " on: “sleep 100”.", "\nLast step: compiling (", "\n2 messages waiting."},
		},
		{
			name: "working, the last step was an earlier run's",
			setup: func(b *bench, u contract.User) {
				b.say(u, "w0", "echo w0")
				b.waitRan(u, "w0")
				b.event(contract.Event{Kind: contract.KindStarted, User: u, JobID: "w0", Text: "“echo w0”"})
				b.event(contract.Event{Kind: contract.KindProgress, User: u, JobID: "w0", Text: "old step"}, "1")
				b.finish(u, "w0", false)
				b.say(u, "w1", "sleep 100")
				b.waitRan(u, "w0", "w1")
				b.waitState(u, contract.StateWorking, "w1")
			},
			want: []string{"Working for "},
			not:  []string{"old step", "Last step", "echo w0"},
		},
		{
			// The run started an hour ago and asked a minute later; the
			// answer came just now. The state's clock restarted with the
			// answer; the run's did not.
			name: "working again after a question",
			setup: func(b *bench, u contract.User) {
				b.into(u, contract.StateWorking)
				began := time.Now().Add(-time.Hour)
				b.event(contract.Event{Kind: contract.KindStarted, User: u, JobID: "w1", Text: "“sleep 100”", At: began})
				b.event(contract.Event{Kind: contract.KindProgress, User: u, JobID: "w1", Text: "asking", At: began.Add(time.Minute)}, "1")
				b.event(contract.Event{Kind: contract.KindQuestion, User: u, JobID: "w1", Question: 1, Text: "May Claude run `ls`?"}, "1")
				b.waitState(u, contract.StateAwaitingPermission, "w1")
				b.say(u, "a1", "yes")
				b.waitState(u, contract.StateWorking, "w1")
			},
			want: []string{"Working for 1h", " on: “sleep 100”.", "\nLast step: asking (59m"},
			not:  []string{"1h0m", "59m0s"},
		},
		{
			name: "awaiting approval, one waiting",
			setup: func(b *bench, u contract.User) {
				b.into(u, contract.StateAwaitingApproval)
				b.say(u, "q1", "echo q1")
			},
			want: []string{"Waiting for your approval for ", "Reply approve or reject.", "\n1 message waiting."},
			not:  []string{"Working", "Idle"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			if tt.setup != nil {
				tt.setup(b, u)
			}
			before := b.snapshot(u)
			got := b.say(u, "s1", "status")
			if len(got) != 1 {
				t.Fatalf("status: got notices %q; want one", got)
			}
			if tt.exact != "" && got[0] != tt.exact {
				t.Errorf("status: got %q; want %q", got[0], tt.exact)
			}
			for _, w := range tt.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("status: got %q; want it to contain %q", got[0], w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got[0], n) {
					t.Errorf("status: got %q; want it not to contain %q", got[0], n)
				}
			}
			b.unchanged(u, before)
		})
	}
}

func TestKeywordNew(t *testing.T) {
	tests := []struct {
		name    string
		working bool // "new" comes while w1 runs
	}{
		{"idle", false},
		{"working", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			var ran []string
			if tt.working {
				b.into(u, contract.StateWorking)
				ran = append(ran, "w1")
			}
			if got, want := b.say(u, "n1", "new"), []string{fsm.MsgNewSession}; !slices.Equal(got, want) {
				t.Errorf("new: got notices %q; want %q", got, want)
			}
			if st, _ := b.state(u); !st.NewSession {
				t.Errorf("state after new: got %+v; want NewSession", st)
			}
			if got := jobIDs(b.jobsOf(u)); !slices.Equal(got, ran) {
				t.Errorf("jobs after new: got %q; want %q", got, ran)
			}
			b.say(u, "m1", "echo m1")
			if tt.working {
				b.finish(u, "w1", false)
			}
			ran = append(ran, "m1")
			b.waitRan(u, ran...)
			b.say(u, "m2", "echo m2")
			b.finish(u, "m1", false)
			ran = append(ran, "m2")
			b.waitRan(u, ran...)

			for _, j := range b.jobsOf(u) {
				if want := j.ID == "m1"; j.NewSession != want {
					t.Errorf("job %s: got NewSession %t; want %t", j.ID, j.NewSession, want)
				}
			}
			if st, _ := b.state(u); st.NewSession {
				t.Errorf("state after the new session started: got %+v; want NewSession false", st)
			}
		})
	}
}

func TestApproveRejectWithoutApprovalRequest(t *testing.T) {
	for _, state := range []string{newUser, contract.StateIdle, contract.StateWorking} {
		for _, kw := range []string{"approve", "reject"} {
			t.Run(stateName(state)+"/"+kw, func(t *testing.T) {
				b := newBench(t, dispatcher.Config{})
				u := user(t, "alice")
				b.into(u, state)
				cancels := b.cancels(u)
				before := b.snapshot(u)

				want := fsm.MsgNoApproval
				if state == contract.StateWorking {
					want = fsm.MsgStillWorking
				}
				if got := b.say(u, "a1", kw); !slices.Equal(got, []string{want}) {
					t.Errorf("%s: got notices %q; want %q", kw, got, []string{want})
				}
				b.unchanged(u, before)
				b.noCancel(cancels)
			})
		}
	}
}

func TestApprovalRequest(t *testing.T) {
	tests := []struct {
		keyword, action, notice string
		queued                  bool // a message comes while the request waits
	}{
		{"approve", contract.ActionApprove, fsm.MsgApproving, false},
		{"reject", contract.ActionReject, fsm.MsgRejecting, false},
		{"approve", contract.ActionApprove, fsm.MsgApproving, true},
		{"reject", contract.ActionReject, fsm.MsgRejecting, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s, message waiting %t", tt.keyword, tt.queued), func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			b.into(u, contract.StateWorking)
			b.finish(u, "w1", true)
			b.waitState(u, contract.StateAwaitingApproval, "w1")
			if got := b.schedules(u); len(got) != 1 || got[0].JobID != "w1" || got[0].User != u {
				t.Errorf("schedules on %s: got %+v; want one for w1", contract.ApprovalScheduleSubject(u), got)
			}

			if tt.queued {
				if got, want := b.say(u, "q1", "echo q1"), []string{fsm.MsgQueued}; !slices.Equal(got, want) {
					t.Errorf("message while awaiting approval: got notices %q; want %q", got, want)
				}
				if got, want := b.queued(u), []string{"q1"}; !slices.Equal(got, want) {
					t.Errorf("queue: got %q; want %q", got, want)
				}
				if st, _ := b.state(u); st.State != contract.StateAwaitingApproval || st.JobID != "w1" {
					t.Errorf("state: got %q job %q; want awaiting_approval w1", st.State, st.JobID)
				}
			}

			if got, want := b.say(u, "a1", tt.keyword), []string{tt.notice}; !slices.Equal(got, want) {
				t.Errorf("%s: got notices %q; want %q", tt.keyword, got, want)
			}
			b.waitRan(u, "w1", "a1")
			if job := b.job(u, "a1"); job.Action != tt.action || job.Text != "" || job.NewSession {
				t.Errorf("job a1: got %+v; want action %q, no text", job, tt.action)
			}
			b.waitState(u, contract.StateWorking, "a1")
			if got := b.schedules(u); len(got) != 0 {
				t.Errorf("schedules after %s: got %+v; want none", tt.keyword, got)
			}

			b.finish(u, "a1", false)
			want := []string{
				"w1: idle->working",
				"w1: working->awaiting_approval",
				"a1: awaiting_approval->working",
			}
			if tt.queued {
				b.waitRan(u, "w1", "a1", "q1")
				b.waitState(u, contract.StateWorking, "q1")
				if job := b.job(u, "q1"); job.Text != "echo q1" || job.Action != "" {
					t.Errorf("job q1: got %+v; want text %q, no action", job, "echo q1")
				}
				b.finish(u, "q1", false)
				want = append(want, "q1: working->working", "q1: working->idle")
			} else {
				want = append(want, "a1: working->idle")
			}
			b.waitState(u, contract.StateIdle, "")
			if got := b.transitions(u); !slices.Equal(got, want) {
				t.Errorf("state events: got %q; want %q", got, want)
			}
			if got := b.queued(u); len(got) != 0 {
				t.Errorf("queue: got %q; want empty", got)
			}
		})
	}
}

func TestApprovalTimeout(t *testing.T) {
	tests := []struct {
		name    string
		queued  bool // a message waits behind the request
		restart string
	}{
		{name: "fires"},
		{name: "fires and starts the waiting message", queued: true},
		{name: "fires after a restart", restart: "before"},
		{name: "fires while no dispatcher runs", restart: "while"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, dispatcher.Config{ApprovalTimeout: 2 * time.Second})
			u := user(t, "alice")
			b.into(u, contract.StateAwaitingApproval)
			if tt.queued {
				b.say(u, "q1", "echo q1")
			}
			if got := b.schedules(u); len(got) != 1 || got[0].JobID != "w1" {
				t.Errorf("schedules: got %+v; want one for w1", got)
			}
			switch tt.restart {
			case "before":
				b.stopDispatcher()
				b.startDispatcher()
			case "while":
				b.stopDispatcher()
				natstest.CheckFor(t, wait, poll, func() error {
					if n := len(b.raw(contract.StreamTimers, contract.ApprovalExpiredSubject(u))); n != 1 {
						return fmt.Errorf("fired timeouts on %s: got %d; want 1", contract.ApprovalExpiredSubject(u), n)
					}
					return nil
				})
				b.startDispatcher()
			}

			if tt.queued {
				b.waitRan(u, "w1", "q1")
				b.waitState(u, contract.StateWorking, "q1")
			} else {
				b.waitState(u, contract.StateIdle, "")
			}
			natstest.CheckFor(t, wait, poll, func() error {
				if got := b.noticesOf(u, "w1"); len(got) != 1 || !timedOut(got[0]) {
					return fmt.Errorf("notices about w1: got %q; want the timed-out notice", got)
				}
				return nil
			})
			if got := b.noticesOf(u, "w1")[0]; !strings.Contains(got, "changes stay") {
				t.Errorf("timed-out notice: got %q; want it to say the changes stay", got)
			}
			want := []string{"w1: idle->working", "w1: working->awaiting_approval", "w1: awaiting_approval->idle"}
			if tt.queued {
				want[2] = "q1: awaiting_approval->working"
			}
			if got := b.transitions(u); !slices.Equal(got, want) {
				t.Errorf("state events: got %q; want %q", got, want)
			}
			if got := b.schedules(u); len(got) != 0 {
				t.Errorf("schedules after the timeout: got %+v; want none", got)
			}
			// The user goes on.
			ran := []string{"w1"}
			if tt.queued {
				b.finish(u, "q1", false)
				ran = append(ran, "q1")
			}
			b.say(u, "m2", "echo m2")
			b.waitRan(u, append(ran, "m2")...)
		})
	}
}

// The timed-out notice tells the person how long textslash waited: with
// TEXTSLASH_APPROVAL_TIMEOUT set it must not claim the default.
func TestApprovalTimeoutNoticeNamesConfiguredTimeout(t *testing.T) {
	b := newBench(t, dispatcher.Config{ApprovalTimeout: 2 * time.Second})
	u := user(t, "alice")
	b.into(u, contract.StateAwaitingApproval)
	b.waitState(u, contract.StateIdle, "")
	natstest.CheckFor(t, wait, poll, func() error {
		if got := b.noticesOf(u, "w1"); len(got) != 1 {
			return fmt.Errorf("notices about w1: got %q; want the timed-out notice", got)
		}
		return nil
	})
	if got := b.noticesOf(u, "w1")[0]; strings.Contains(got, "30 minutes") {
		t.Errorf("timed-out notice with a 2s timeout: got %q; want it not to claim 30 minutes", got)
	}
}

// The timeout never fires before the person has had all the time it gives
// them. Both times compared are the dispatcher's own: the state event is
// published before the timeout is armed, the notice when it has fired.
func TestApprovalTimeoutNotEarly(t *testing.T) {
	const timeout = 2 * time.Second
	b := newBench(t, dispatcher.Config{ApprovalTimeout: timeout})
	u := user(t, "alice")
	b.into(u, contract.StateAwaitingApproval)
	b.waitState(u, contract.StateIdle, "")
	var requested, fired time.Time
	for _, ev := range b.events(u, contract.KindState) {
		if ev.To == contract.StateAwaitingApproval {
			requested = ev.At
		}
	}
	natstest.CheckFor(t, wait, poll, func() error {
		for _, ev := range b.events(u, contract.KindNotice) {
			if ev.JobID == "w1" && timedOut(ev.Text) {
				fired = ev.At
				return nil
			}
		}
		return fmt.Errorf("notices: got %q; want the timed-out notice about w1", b.notices(u))
	})
	if requested.IsZero() {
		t.Fatalf("state events: got %q; want one to awaiting_approval", b.transitions(u))
	}
	if waited := fired.Sub(requested); waited < timeout {
		t.Errorf("timeout fired %v after the approval request; want at least the configured %v", waited, timeout)
	}
}

// An answered approval request never times out, whatever the answer.
func TestApprovalAnsweredBeforeTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	tests := []struct {
		keyword, notice, state string
	}{
		{"approve", fsm.MsgApproving, contract.StateWorking},
		{"reject", fsm.MsgRejecting, contract.StateWorking},
		{"cancel", fsm.MsgCancelledKept, contract.StateIdle},
	}
	for _, tt := range tests {
		t.Run(tt.keyword, func(t *testing.T) {
			b := newBench(t, dispatcher.Config{ApprovalTimeout: timeout})
			u := user(t, "alice")
			b.into(u, contract.StateAwaitingApproval)
			// The schedule was armed before the state was stored.
			deadline := time.Now().Add(timeout + time.Second)

			if got, want := b.say(u, "a1", tt.keyword), []string{tt.notice}; !slices.Equal(got, want) {
				t.Errorf("%s: got notices %q; want %q", tt.keyword, got, want)
			}
			if got := b.schedules(u); len(got) != 0 {
				t.Fatalf("schedules after %s: got %+v; want none", tt.keyword, got)
			}
			if tt.state == contract.StateWorking {
				b.waitState(u, contract.StateWorking, "a1")
				b.finish(u, "a1", false)
			}
			b.waitState(u, contract.StateIdle, "")
			_, rev := b.state(u)

			natstest.HoldsUntil(t, deadline, func() error {
				if got := b.noticesOf(u, "w1"); len(got) != 0 {
					return fmt.Errorf("notices about w1 after %s: got %q; want none", tt.keyword, got)
				}
				if n := len(b.raw(contract.StreamTimers, contract.ApprovalExpiredSubject(u))); n != 0 {
					return fmt.Errorf("fired timeouts after %s: got %d; want none", tt.keyword, n)
				}
				if st, r := b.state(u); st.State != contract.StateIdle || r != rev {
					return fmt.Errorf("state after %s: got %q rev %d; want idle rev %d", tt.keyword, st.State, r, rev)
				}
				return nil
			})
		})
	}
}

func TestCancelWhileWorking(t *testing.T) {
	tests := []struct {
		name string
		// lateDoneFirst: the cancelled run's done comes before the next
		// message; otherwise while the next message runs.
		lateDoneFirst bool
	}{
		{"late done while idle", true},
		{"late done while the next message runs", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			cancels := b.cancels(u)
			b.into(u, contract.StateWorking)
			b.say(u, "q1", "echo q1")
			b.say(u, "q2", "echo q2")
			if got, want := b.queued(u), []string{"q1", "q2"}; !slices.Equal(got, want) {
				t.Fatalf("queue: got %q; want %q", got, want)
			}

			if got, want := b.say(u, "c1", "cancel"), []string{"Cancelled. Nothing is running now. 2 waiting messages were dropped."}; !slices.Equal(got, want) {
				t.Errorf("cancel: got notices %q; want %q", got, want)
			}
			// At once: no waiting for the runner.
			if st, _ := b.state(u); st.State != contract.StateIdle || st.JobID != "" {
				t.Errorf("state right after cancel: got %q job %q; want idle", st.State, st.JobID)
			}
			if got := b.queued(u); len(got) != 0 {
				t.Errorf("queue after cancel: got %q; want empty", got)
			}
			select {
			case m := <-cancels:
				if string(m.Data) != "w1" {
					t.Errorf("cancel on %s: got %q; want %q", m.Subject, m.Data, "w1")
				}
			case <-time.After(wait):
				t.Fatalf("no cancel on %s in %v", contract.CancelSubject(u), wait)
			}
			b.noCancel(cancels) // just one

			if tt.lateDoneFirst {
				before := b.snapshot(u)
				b.finish(u, "w1", false)
				b.unchanged(u, before)
			}
			b.say(u, "m2", "echo m2")
			b.waitRan(u, "w1", "m2")
			b.waitState(u, contract.StateWorking, "m2")
			if !tt.lateDoneFirst {
				before := b.snapshot(u)
				b.finish(u, "w1", false)
				b.unchanged(u, before)
			}
			b.finish(u, "m2", false)
			b.waitState(u, contract.StateIdle, "")
			if got := jobIDs(b.jobsOf(u)); !slices.Equal(got, []string{"w1", "m2"}) {
				t.Errorf("jobs: got %q; want %q (the cancelled queue never runs)", got, []string{"w1", "m2"})
			}
			b.noCancel(cancels)
		})
	}
}

func TestCancelWhileAwaitingApproval(t *testing.T) {
	b := newBench(t, dispatcher.Config{ApprovalTimeout: 2 * time.Second})
	u := user(t, "alice")
	cancels := b.cancels(u)
	b.into(u, contract.StateAwaitingApproval)
	deadline := time.Now().Add(3 * time.Second)
	b.say(u, "q1", "echo q1")

	if got, want := b.say(u, "c1", "cancel"), []string{"Cancelled. The changes stay in your workspace, uncommitted. 1 waiting message was dropped."}; !slices.Equal(got, want) {
		t.Errorf("cancel: got notices %q; want %q", got, want)
	}
	if st, _ := b.state(u); st.State != contract.StateIdle || st.JobID != "" {
		t.Errorf("state right after cancel: got %q job %q; want idle", st.State, st.JobID)
	}
	if got := b.queued(u); len(got) != 0 {
		t.Errorf("queue after cancel: got %q; want empty", got)
	}
	if got := b.schedules(u); len(got) != 0 {
		t.Errorf("schedules after cancel: got %+v; want none", got)
	}
	b.noCancel(cancels) // nothing runs
	natstest.HoldsUntil(t, deadline, func() error {
		if got := b.noticesOf(u, "w1"); len(got) != 0 {
			return fmt.Errorf("notices about w1 after cancel: got %q; want none", got)
		}
		return nil
	})
	b.say(u, "m2", "echo m2")
	b.waitRan(u, "w1", "m2")
}

func TestCancelWhenIdle(t *testing.T) {
	for _, state := range []string{newUser, contract.StateIdle} {
		t.Run(stateName(state), func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			cancels := b.cancels(u)
			b.into(u, state)
			before := b.snapshot(u)
			if got, want := b.say(u, "c1", "cancel"), []string{fsm.MsgNothingToStop}; !slices.Equal(got, want) {
				t.Errorf("cancel: got notices %q; want %q", got, want)
			}
			b.unchanged(u, before)
			b.noCancel(cancels)
		})
	}
}

// A keyword is the whole message, in any case, with any spaces around it;
// anything more is a message for the agent.
func TestKeywordsWholeMessageAnyCase(t *testing.T) {
	tests := []struct {
		text    string
		keyword bool
	}{
		{"cancel", true},
		{"  CANCEL\n", true},
		{"\tCancel ", true},
		{"cancel it", false},
		{"please cancel", false},
		{"cancel\ncancel", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("working/%q", tt.text), func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			b.into(u, contract.StateWorking)
			got := b.say(u, "k1", tt.text)
			st, _ := b.state(u)
			if tt.keyword {
				if want := []string{fsm.MsgCancelled}; !slices.Equal(got, want) {
					t.Errorf("notices: got %q; want %q", got, want)
				}
				if st.State != contract.StateIdle {
					t.Errorf("state: got %q; want idle", st.State)
				}
				return
			}
			if want := []string{fsm.MsgQueued}; !slices.Equal(got, want) {
				t.Errorf("notices: got %q; want %q", got, want)
			}
			if q := b.queued(u); !slices.Equal(q, []string{"k1"}) {
				t.Errorf("queue: got %q; want %q", q, []string{"k1"})
			}
			if st.State != contract.StateWorking || st.JobID != "w1" {
				t.Errorf("state: got %q job %q; want working w1", st.State, st.JobID)
			}
		})
		if tt.keyword {
			continue
		}
		t.Run(fmt.Sprintf("idle/%q", tt.text), func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			if got := b.say(u, "k1", tt.text); len(got) != 0 {
				t.Errorf("notices: got %q; want none", got)
			}
			b.waitRan(u, "k1")
			if job := b.job(u, "k1"); job.Text != tt.text || job.Action != "" {
				t.Errorf("job: got text %q action %q; want text %q, no action", job.Text, job.Action, tt.text)
			}
		})
	}

	// Every keyword, dressed up.
	others := []struct {
		state, text, want string
	}{
		{newUser, " HELP ", fsm.MsgHelp},
		{contract.StateIdle, "Status\r\n", "Idle: nothing is running.\nMode: ask."},
		{contract.StateIdle, "NEW", fsm.MsgNewSession},
		{contract.StateWorking, "\tReject", fsm.MsgStillWorking},
		{contract.StateAwaitingApproval, "APPROVE  ", fsm.MsgApproving},
		{contract.StateAwaitingApproval, " Reject", fsm.MsgRejecting},
	}
	for _, tt := range others {
		t.Run(fmt.Sprintf("%s/%q", stateName(tt.state), tt.text), func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			b.into(u, tt.state)
			if got, want := b.say(u, "k1", tt.text), []string{tt.want}; !slices.Equal(got, want) {
				t.Errorf("notices: got %q; want %q", got, want)
			}
			if got := b.queued(u); len(got) != 0 {
				t.Errorf("queue: got %q; want empty", got)
			}
		})
	}
}

// The runner's reply reaches the person as the dispatcher takes in the
// run's end, not after: an approve or reject sent at once may come before
// the end is taken in. It answers the approval the person saw, not "still
// working". (The dispatcher-done consumer is paused here to hold the end
// back; TestFIFOInWorkspace met the race on a loaded machine.)
func TestAnswerBeforeTheEndIsTakenIn(t *testing.T) {
	for _, answer := range []string{fsm.Approve, fsm.Reject} {
		t.Run(answer, func(t *testing.T) {
			b := newBench(t, dispatcher.Config{})
			u := user(t, "alice")
			b.into(u, contract.StateWorking)
			ctx := t.Context()
			b.holdRunEvents()
			b.event(contract.Event{Kind: contract.KindDone, User: u, JobID: "w1", Status: contract.StatusOK, Text: "ok", Approval: true})
			notices := b.say(u, "a1", answer)
			if slices.Contains(notices, fsm.MsgStillWorking) || len(notices) == 0 {
				t.Errorf("%s after the run's reply, before its end was taken in: notices %q; want it carried out", answer, notices)
			}
			b.waitRan(u, "w1", "a1")
			if got := b.job(u, "a1").Action; got != answer {
				t.Errorf("job a1's action %q; want %q", got, answer)
			}
			b.releaseRunEvents()
			// The end, taken in late, changes nothing.
			st, err := b.js.Stream(ctx, contract.StreamEvents)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := st.GetLastMsgForSubject(ctx, contract.EventSubject(u, contract.KindDone))
			if err != nil {
				t.Fatal(err)
			}
			b.doneHandled(raw.Sequence)
			b.waitState(u, contract.StateWorking, "a1")
			b.waitRan(u, "w1", "a1")
		})
	}
}

// holdRunEvents pauses the dispatcher's consumer of run events (ends and
// questions): they wait in EVENTS, not yet taken in.
func (b *bench) holdRunEvents() {
	b.t.Helper()
	if _, err := b.js.PauseConsumer(b.t.Context(), contract.StreamEvents, contract.ConsumerDispatcherDone, time.Now().Add(time.Hour)); err != nil {
		b.t.Fatal(err)
	}
}

// releaseRunEvents resumes it. (A resumed consumer delivers to the
// requests waiting on it only once a new message comes: another person's
// end.)
func (b *bench) releaseRunEvents() {
	b.t.Helper()
	if _, err := b.js.ResumeConsumer(b.t.Context(), contract.StreamEvents, contract.ConsumerDispatcherDone); err != nil {
		b.t.Fatal(err)
	}
	b.event(contract.Event{Kind: contract.KindDone, User: user(b.t, "bob"), JobID: "b1", Status: contract.StatusOK, Text: "ok"})
}
