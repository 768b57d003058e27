package dispatcher_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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
	"github.com/textslash/textslash/natstest"
)

// wait bounds every CheckFor: far longer than anything here takes.
const (
	wait = 10 * time.Second
	poll = 5 * time.Millisecond
)

// harness is an embedded JetStream server, provisioned, with dispatchers
// running on it.
type harness struct {
	t     *testing.T
	js    jetstream.JetStream
	users jetstream.KeyValue
}

// start provisions a fresh server and runs n dispatchers on it.
func start(t *testing.T, n int) *harness {
	t.Helper()
	h := provisioned(t)
	h.run(n)
	return h
}

// provisioned is a fresh server, provisioned, with no dispatcher yet.
func provisioned(t *testing.T) *harness {
	t.Helper()
	s := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), s.JS, bus.Options{}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	users, err := s.JS.KeyValue(t.Context(), contract.BucketUsers)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, js: s.JS, users: users}
}

// run runs n dispatchers. When the test ends it cancels them and waits for
// every Run to return.
func (h *harness) run(n int) { h.runN(dispatcher.Config{}, n) }

// runWith runs one dispatcher of cfg.
func (h *harness) runWith(cfg dispatcher.Config) { h.runN(cfg, 1) }

func (h *harness) runN(cfg dispatcher.Config, n int) {
	t := h.t
	t.Helper()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	runCtx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, n)
	for i := range n {
		d, err := dispatcher.New(cfg, h.js, log.With().Int("dispatcher", i).Logger())
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		go func() { errs <- d.Run(runCtx) }()
	}
	t.Cleanup(func() {
		cancel()
		timeout := time.After(30 * time.Second)
		for range n {
			select {
			case err := <-errs:
				if err != nil {
					t.Errorf("Run: got %v; want nil after cancel", err)
				}
			case <-timeout:
				t.Errorf("Run did not return 30s after its context ended")
				return
			}
		}
	})
}

func user(t testing.TB, id string) contract.User {
	t.Helper()
	u, err := contract.NewUser(contract.ChannelWeb, id)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// send publishes a message as ingress does and returns its IN sequence.
func (h *harness) send(u contract.User, id, text string) uint64 {
	h.t.Helper()
	return h.sendWithMsgID(u, id, text, contract.MsgID(u, id))
}

// sendWithMsgID publishes a message under another Nats-Msg-Id: to the
// dispatcher it is the same message delivered again.
func (h *harness) sendWithMsgID(u contract.User, id, text, msgID string) uint64 {
	h.t.Helper()
	in := contract.Inbound{ID: id, User: u, Text: text, At: time.Now().UTC()}
	data, err := contract.Encode(&in)
	if err != nil {
		h.t.Fatal(err)
	}
	ack, err := h.js.Publish(h.t.Context(), contract.InboundSubject(u), data, jetstream.WithMsgID(msgID))
	if err != nil {
		h.t.Fatalf("publish inbound %s: %v", id, err)
	}
	if ack.Duplicate {
		h.t.Fatalf("publish inbound %s: deduplicated", id)
	}
	return ack.Sequence
}

// done publishes a run's end as the runner does and returns its EVENTS sequence.
func (h *harness) done(u contract.User, jobID string) uint64 {
	h.t.Helper()
	ctx := h.t.Context()
	ev := contract.Event{Kind: contract.KindDone, User: u, JobID: jobID, Status: contract.StatusOK, Text: "ok"}
	if err := bus.PublishEvent(ctx, h.js, ev, contract.MsgID(u, jobID, "done")); err != nil {
		h.t.Fatalf("publish done %s: %v", jobID, err)
	}
	st, err := h.js.Stream(ctx, contract.StreamEvents)
	if err != nil {
		h.t.Fatal(err)
	}
	m, err := st.GetLastMsgForSubject(ctx, contract.EventSubject(u, contract.KindDone))
	if err != nil {
		h.t.Fatal(err)
	}
	return m.Sequence
}

// handled waits until the dispatcher has settled (acknowledged) everything
// up to seq on the consumer: the effects of that message are then visible.
func (h *harness) handled(stream, consumer string, seq uint64) {
	h.t.Helper()
	natstest.CheckFor(h.t, wait, poll, func() error {
		c, err := h.js.Consumer(h.t.Context(), stream, consumer)
		if err != nil {
			return err
		}
		info, err := c.Info(h.t.Context())
		if err != nil {
			return err
		}
		if info.AckFloor.Stream < seq {
			return fmt.Errorf("%s acknowledged up to %d (pending %d, redelivered %d); want %d", consumer,
				info.AckFloor.Stream, info.NumAckPending, info.NumRedelivered, seq)
		}
		return nil
	})
}

func (h *harness) inboundHandled(seq uint64) {
	h.handled(contract.StreamIn, contract.ConsumerDispatcher, seq)
}
func (h *harness) doneHandled(seq uint64) {
	h.handled(contract.StreamEvents, contract.ConsumerDispatcherDone, seq)
}

// raw reads, without consuming, every message of stream on subject.
func (h *harness) raw(stream, subject string) []*jetstream.RawStreamMsg {
	h.t.Helper()
	ctx := h.t.Context()
	st, err := h.js.Stream(ctx, stream)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			h.t.Fatalf("read %s %s: %v", stream, subject, err)
		}
		out = append(out, m)
		seq = m.Sequence + 1
	}
}

// waitRaw waits until stream holds n messages on subject: a state is
// stored before its effects (a timeout armed or disarmed) are carried out.
func (h *harness) waitRaw(stream, subject string, n int) {
	h.t.Helper()
	natstest.CheckFor(h.t, 10*time.Second, 10*time.Millisecond, func() error {
		if got := len(h.raw(stream, subject)); got != n {
			return fmt.Errorf("%s holds %d messages on %s; want %d", stream, got, subject, n)
		}
		return nil
	})
}

func (h *harness) jobs(u contract.User) []contract.Job {
	h.t.Helper()
	var out []contract.Job
	for _, m := range h.raw(contract.StreamJobs, contract.JobSubject(u)) {
		var j contract.Job
		if err := contract.Decode(m.Data, &j); err != nil {
			h.t.Fatalf("job: %v", err)
		}
		out = append(out, j)
	}
	return out
}

func (h *harness) queued(u contract.User) []string {
	h.t.Helper()
	var out []string
	for _, m := range h.raw(contract.StreamQueue, contract.QueueSubject(u)) {
		var in contract.Inbound
		if err := contract.Decode(m.Data, &in); err != nil {
			h.t.Fatalf("queued: %v", err)
		}
		out = append(out, in.ID)
	}
	return out
}

func (h *harness) events(u contract.User, kind contract.EventKind) []contract.Event {
	h.t.Helper()
	var out []contract.Event
	for _, m := range h.raw(contract.StreamEvents, contract.EventSubject(u, kind)) {
		var ev contract.Event
		if err := contract.Decode(m.Data, &ev); err != nil {
			h.t.Fatalf("event: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// notices are "<job id>: <text>" of every notice of u.
func (h *harness) notices(u contract.User) []string {
	var out []string
	for _, ev := range h.events(u, contract.KindNotice) {
		out = append(out, ev.JobID+": "+ev.Text)
	}
	return out
}

// transitions are "<job id>: <from>-><to>" of every state event of u.
func (h *harness) transitions(u contract.User) []string {
	var out []string
	for _, ev := range h.events(u, contract.KindState) {
		out = append(out, ev.JobID+": "+ev.From+"->"+ev.To)
	}
	return out
}

// state is u's state entry; rev 0 when there is none.
func (h *harness) state(u contract.User) (contract.UserState, uint64) {
	h.t.Helper()
	e, err := h.users.Get(h.t.Context(), u.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return contract.UserState{}, 0
	}
	if err != nil {
		h.t.Fatalf("state of %s: %v", u, err)
	}
	var st contract.UserState
	if err := contract.Decode(e.Value(), &st); err != nil {
		h.t.Fatalf("state of %s: %v", u, err)
	}
	return st, e.Revision()
}

// setState changes u's stored state with change, as a crashed dispatcher
// may have left it.
func (h *harness) setState(u contract.User, change func(*contract.UserState)) {
	h.t.Helper()
	st, rev := h.state(u)
	change(&st)
	data, err := contract.Encode(&st)
	if err != nil {
		h.t.Fatal(err)
	}
	if rev == 0 {
		_, err = h.users.Create(h.t.Context(), u.Key(), data)
	} else {
		_, err = h.users.Update(h.t.Context(), u.Key(), data, rev)
	}
	if err != nil {
		h.t.Fatalf("set state of %s: %v", u, err)
	}
}

// sameState reports whether a and b are the same but for InSeq, which
// every message routed moves on. No entry (the zero state) is the same as
// an idle one of a person who never ran anything.
func sameState(a, b contract.UserState) bool {
	norm := func(s contract.UserState) contract.UserState {
		if s.State == "" {
			s.V, s.State = contract.Version, contract.StateIdle
		}
		s.InSeq = 0
		return s
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func jobIDs(jobs []contract.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

// waitJobs waits until u has exactly the jobs ids, in order.
func (h *harness) waitJobs(u contract.User, ids ...string) {
	h.t.Helper()
	natstest.CheckFor(h.t, wait, poll, func() error {
		if got := jobIDs(h.jobs(u)); !slices.Equal(got, ids) {
			return fmt.Errorf("jobs of %s: got %q; want %q", u, got, ids)
		}
		return nil
	})
}

// waitState waits until u's state is state (with job id).
func (h *harness) waitState(u contract.User, state, jobID string) {
	h.t.Helper()
	natstest.CheckFor(h.t, wait, poll, func() error {
		st, _ := h.state(u)
		if st.State != state || st.JobID != jobID {
			return fmt.Errorf("state of %s: got %q job %q; want %q job %q", u, st.State, st.JobID, state, jobID)
		}
		return nil
	})
}

func TestIdleUserStartsJob(t *testing.T) {
	h := start(t, 1)
	u := user(t, "alice")
	h.send(u, "SM1", "echo hi")

	h.waitJobs(u, "SM1")
	job := h.jobs(u)[0]
	if job.User != u || job.Text != "echo hi" || job.V != contract.Version || job.At.IsZero() {
		t.Errorf("job: got %+v; want id SM1, user %s, text %q, v1, a time", job, u, "echo hi")
	}
	h.waitState(u, contract.StateWorking, "SM1")
	natstest.CheckFor(t, wait, poll, func() error {
		if got, want := h.transitions(u), []string{"SM1: idle->working"}; !slices.Equal(got, want) {
			return fmt.Errorf("state events: got %q; want %q", got, want)
		}
		return nil
	})
	if got := h.notices(u); len(got) != 0 {
		t.Errorf("notices: got %q; want none", got)
	}
	if got := h.queued(u); len(got) != 0 {
		t.Errorf("queue: got %q; want empty", got)
	}
}

func TestQueueFillsThenDrainsInOrder(t *testing.T) {
	h := start(t, 1)
	u := user(t, "alice")
	h.send(u, "m1", "first")
	h.waitJobs(u, "m1")

	// While working: five wait, the sixth is refused.
	var last uint64
	for i := 2; i <= 7; i++ {
		last = h.send(u, fmt.Sprint("m", i), fmt.Sprint("message ", i))
	}
	h.inboundHandled(last)
	wantNotices := []string{
		"m2: " + dispatcher.MsgQueued,
		"m3: Got it. You're 2nd in line.",
		"m4: Got it. You're 3rd in line.",
		"m5: Got it. You're 4th in line.",
		"m6: Got it. You're 5th in line.",
		"m7: " + dispatcher.MsgQueueFull,
	}
	if got := h.notices(u); !slices.Equal(got, wantNotices) {
		t.Errorf("notices: got %q; want %q", got, wantNotices)
	}
	if got, want := jobIDs(h.jobs(u)), []string{"m1"}; !slices.Equal(got, want) {
		t.Errorf("jobs while working: got %q; want %q", got, want)
	}
	if got, want := h.queued(u), []string{"m2", "m3", "m4", "m5", "m6"}; !slices.Equal(got, want) {
		t.Errorf("queue: got %q; want %q", got, want)
	}

	// Each run's end starts the next waiting message, in arrival order.
	ran := []string{"m1"}
	for i := 2; i <= 6; i++ {
		h.done(u, ran[len(ran)-1])
		next := fmt.Sprint("m", i)
		ran = append(ran, next)
		h.waitJobs(u, ran...)
		h.waitState(u, contract.StateWorking, next)
		// The job is published before its queue entry is removed: poll.
		want := []string{"m2", "m3", "m4", "m5", "m6"}[i-1:]
		natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
			if got := h.queued(u); !slices.Equal(got, want) {
				return fmt.Errorf("queue after %s started: got %q; want %q", next, got, want)
			}
			return nil
		})
		if job := h.jobs(u)[i-1]; job.Text != fmt.Sprint("message ", i) {
			t.Errorf("job %s text: got %q; want %q", next, job.Text, fmt.Sprint("message ", i))
		}
	}
	seq := h.done(u, "m6")
	h.doneHandled(seq)
	h.waitState(u, contract.StateIdle, "")
	if got := h.queued(u); len(got) != 0 {
		t.Errorf("queue at the end: got %q; want empty", got)
	}
	if got, want := jobIDs(h.jobs(u)), []string{"m1", "m2", "m3", "m4", "m5", "m6"}; !slices.Equal(got, want) {
		t.Errorf("jobs: got %q; want %q (the refused m7 never runs)", got, want)
	}
	wantStates := []string{
		"m1: idle->working",
		"m2: working->working",
		"m3: working->working",
		"m4: working->working",
		"m5: working->working",
		"m6: working->working",
		"m6: working->idle",
	}
	if got := h.transitions(u); !slices.Equal(got, wantStates) {
		t.Errorf("state events: got %q; want %q", got, wantStates)
	}

	// Idle again: the next message runs at once.
	h.send(u, "m8", "again")
	h.waitJobs(u, "m1", "m2", "m3", "m4", "m5", "m6", "m8")
}

// A done event of a job that is not the running one starts nothing and
// stops nothing; the job is remembered as finished, so its message, if it
// still waits in the queue (a state left behind by a crash), never starts
// again (TestDoneAheadOfState).
func TestStaleDoneStartsNothing(t *testing.T) {
	tests := []struct {
		name    string
		send    []string // the first starts, the rest wait
		staleID string
	}{
		{"working, unknown job", []string{"m1", "m2"}, "nope"},
		{"working, a waiting message's id", []string{"m1", "m2", "m3"}, "m3"},
		{"working, nothing waiting", []string{"m1"}, "m0"},
		{"idle", nil, "m1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 1)
			u := user(t, "alice")
			var last uint64
			for _, id := range tt.send {
				last = h.send(u, id, "text of "+id)
			}
			if last != 0 {
				h.inboundHandled(last)
			}
			stBefore, _ := h.state(u)
			jobsBefore, queueBefore, statesBefore := jobIDs(h.jobs(u)), h.queued(u), h.transitions(u)

			h.doneHandled(h.done(u, tt.staleID))

			st, _ := h.state(u)
			if stBefore.State == "" {
				stBefore.State = contract.StateIdle // a user without state is idle
			}
			if st.State != stBefore.State || st.JobID != stBefore.JobID {
				t.Errorf("state: got %+v; want %+v", st, stBefore)
			}
			if !slices.Contains(st.Finished, tt.staleID) {
				t.Errorf("state %+v does not count %s finished", st, tt.staleID)
			}
			if got := jobIDs(h.jobs(u)); !slices.Equal(got, jobsBefore) {
				t.Errorf("jobs: got %q; want %q", got, jobsBefore)
			}
			if got := h.queued(u); !slices.Equal(got, queueBefore) {
				t.Errorf("queue: got %q; want %q", got, queueBefore)
			}
			if got := h.transitions(u); !slices.Equal(got, statesBefore) {
				t.Errorf("state events: got %q; want %q", got, statesBefore)
			}
		})
	}
}

func TestEmptyMessage(t *testing.T) {
	tests := []struct {
		name    string
		working bool
		text    string
	}{
		{"idle, empty", false, ""},
		{"idle, spaces", false, "   "},
		{"idle, whitespace", false, " \n\t\r\n "},
		{"working, spaces", true, "  "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 1)
			u := user(t, "alice")
			var wantJobs []string
			if tt.working {
				h.send(u, "m0", "sleep 1")
				wantJobs = []string{"m0"}
			}
			h.inboundHandled(h.send(u, "m1", tt.text))
			if got, want := h.notices(u), []string{"m1: " + dispatcher.MsgEmpty}; !slices.Equal(got, want) {
				t.Errorf("notices: got %q; want %q", got, want)
			}
			if got := jobIDs(h.jobs(u)); !slices.Equal(got, wantJobs) {
				t.Errorf("jobs: got %q; want %q", got, wantJobs)
			}
			if got := h.queued(u); len(got) != 0 {
				t.Errorf("queue: got %q; want empty", got)
			}
			st, rev := h.state(u)
			if !tt.working && rev != 0 {
				t.Errorf("state: got %+v; want none", st)
			}
		})
	}
}

func TestMedia(t *testing.T) {
	jpeg := contract.Media{URL: "https://x/y.jpeg", ContentType: "image/jpeg"}
	pdf := contract.Media{URL: "https://x/y.pdf", ContentType: "application/pdf", Name: "y.pdf"}
	voice := contract.Media{URL: "https://x/v.ogg", ContentType: "audio/ogg", Voice: true}
	tests := []struct {
		name        string
		text        string
		media       []contract.Media
		wantNotices []string
		wantMedia   []contract.Media // of the job; no job when nil
	}{
		{"image only runs", "", []contract.Media{jpeg}, nil, []contract.Media{jpeg}},
		{"pdf only runs", "", []contract.Media{pdf}, nil, []contract.Media{pdf}},
		{"text and pdf run", "look", []contract.Media{pdf}, nil, []contract.Media{pdf}},
		{"voice note runs", "", []contract.Media{voice}, nil, []contract.Media{voice}},
		{"image and pdf run", "", []contract.Media{pdf, jpeg}, nil, []contract.Media{pdf, jpeg}},
		{"a keyword with a file is a message", "status", []contract.Media{pdf}, nil, []contract.Media{pdf}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 1)
			u := user(t, "alice")
			in := contract.Inbound{ID: "m1", User: u, Text: tt.text, Media: tt.media}
			data, err := contract.Encode(&in)
			if err != nil {
				t.Fatal(err)
			}
			ack, err := h.js.Publish(t.Context(), contract.InboundSubject(u), data, jetstream.WithMsgID(contract.MsgID(u, "m1")))
			if err != nil {
				t.Fatal(err)
			}
			h.inboundHandled(ack.Sequence)
			if got := h.notices(u); !slices.Equal(got, tt.wantNotices) {
				t.Errorf("notices: got %q; want %q", got, tt.wantNotices)
			}
			if tt.wantMedia == nil {
				if got := h.jobs(u); len(got) != 0 {
					t.Errorf("jobs: got %+v; want none", got)
				}
				return
			}
			h.waitJobs(u, "m1")
			if got := h.jobs(u)[0].Media; !slices.Equal(got, tt.wantMedia) {
				t.Errorf("job media: got %+v; want %+v", got, tt.wantMedia)
			}
		})
	}
}

func TestUsersDoNotBlockEachOther(t *testing.T) {
	h := start(t, 1)
	alice, bob := user(t, "alice"), user(t, "bob")
	h.send(alice, "a1", "sleep 100")
	h.waitJobs(alice, "a1")
	var last uint64
	for i := 2; i <= 7; i++ { // fills alice's queue, and one over
		last = h.send(alice, fmt.Sprint("a", i), "x")
	}
	h.inboundHandled(last)

	h.send(bob, "b1", "echo bob")
	h.waitJobs(bob, "b1")
	h.waitState(bob, contract.StateWorking, "b1")
	if got := h.notices(bob); len(got) != 0 {
		t.Errorf("bob's notices: got %q; want none", got)
	}
	h.done(bob, "b1")
	h.waitState(bob, contract.StateIdle, "")
	h.send(bob, "b2", "echo bob again")
	h.waitJobs(bob, "b1", "b2")

	// Bob's runs did not move alice.
	if got, want := jobIDs(h.jobs(alice)), []string{"a1"}; !slices.Equal(got, want) {
		t.Errorf("alice's jobs: got %q; want %q", got, want)
	}
	if st, _ := h.state(alice); st.State != contract.StateWorking || st.JobID != "a1" {
		t.Errorf("alice's state: got %+v; want working a1", st)
	}
	if got := len(h.queued(alice)); got != contract.QueueLimit {
		t.Errorf("alice's queue: got %d; want %d", got, contract.QueueLimit)
	}
}

func TestRedeliveredInboundRepublishesJob(t *testing.T) {
	tests := []struct {
		name string
		// before: what happened before the message is seen again.
		before func(h *harness, u contract.User)
	}{
		{"job was published", func(h *harness, u contract.User) {
			h.send(u, "m1", "echo hi")
			h.waitJobs(u, "m1")
			h.waitState(u, contract.StateWorking, "m1")
		}},
		{"crashed before publishing the job", func(h *harness, u contract.User) {
			h.setState(u, func(st *contract.UserState) {
				*st = contract.UserState{State: contract.StateWorking, JobID: "m1", Since: time.Now().UTC()}
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 1)
			u := user(t, "alice")
			tt.before(h, u)
			before, _ := h.state(u)

			h.inboundHandled(h.sendWithMsgID(u, "m1", "echo hi", "redelivery-of-m1"))

			h.waitJobs(u, "m1")
			if job := h.jobs(u)[0]; job.Text != "echo hi" {
				t.Errorf("job text: got %q; want %q", job.Text, "echo hi")
			}
			if st, _ := h.state(u); st.State != contract.StateWorking || st.JobID != "m1" || !sameState(st, before) {
				t.Errorf("state: got %+v; want %+v", st, before)
			}
			if got := h.notices(u); len(got) != 0 {
				t.Errorf("notices: got %q; want none", got)
			}
			if got := h.queued(u); len(got) != 0 {
				t.Errorf("queue: got %q; want empty", got)
			}
		})
	}
}

// A message delivered again after its run has ended (the dispatcher died, or
// its ack was lost, after it started the job, and the runner was quick) must
// not run again, and must not leave the user stuck.
func TestRedeliveredInboundAfterItsRunDoesNotWedgeUser(t *testing.T) {
	tests := []struct {
		name    string
		working bool // another message is running when m1 comes again
	}{
		{"user idle", false},
		{"user working on another message", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 1)
			u := user(t, "alice")
			h.send(u, "m1", "echo once")
			h.waitJobs(u, "m1")
			h.doneHandled(h.done(u, "m1"))
			h.waitState(u, contract.StateIdle, "")
			want := []string{"m1"}
			if tt.working {
				h.send(u, "m2", "sleep 1")
				want = append(want, "m2")
				h.waitJobs(u, want...)
			}

			h.inboundHandled(h.sendWithMsgID(u, "m1", "echo once", "redelivery-of-m1"))
			if tt.working {
				h.doneHandled(h.done(u, "m2"))
			}
			h.send(u, "m3", "echo next")
			want = append(want, "m3")

			natstest.CheckFor(t, wait, poll, func() error {
				if got := jobIDs(h.jobs(u)); !slices.Equal(got, want) {
					st, _ := h.state(u)
					return fmt.Errorf("jobs: got %q; want %q (state %s job %q, queue %q, notices %q)",
						got, want, st.State, st.JobID, h.queued(u), h.notices(u))
				}
				return nil
			})
		})
	}
}

// An inbound message without an id can never be matched by its run's done
// event (advance ignores done events with an empty job id): it must not
// become the running job, or the user waits forever.
func TestInboundWithoutIDDoesNotWedgeUser(t *testing.T) {
	h := start(t, 1)
	u := user(t, "alice")
	in := contract.Inbound{ID: "", User: u, Text: "echo no id", At: time.Now().UTC()}
	data, err := contract.Encode(&in)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := h.js.Publish(t.Context(), contract.InboundSubject(u), data, jetstream.WithMsgID("no-id-1"))
	if err != nil {
		t.Fatal(err)
	}
	h.inboundHandled(ack.Sequence)
	// Whatever became of it, a runner answers every job it was given.
	for _, j := range h.jobs(u) {
		h.doneHandled(h.done(u, j.ID))
	}
	h.send(u, "m2", "echo next")
	natstest.CheckFor(t, wait, poll, func() error {
		jobs := jobIDs(h.jobs(u))
		if !slices.Contains(jobs, "m2") {
			st, _ := h.state(u)
			return fmt.Errorf("jobs: got %q; want m2 among them (state %s job %q, queue %q)", jobs, st.State, st.JobID, h.queued(u))
		}
		return nil
	})
}

// Dispatchers share the work; a simulated runner answers every job. Users
// send concurrently, each user's messages one after another.
func TestDispatchersManyUsers(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprint(n, " dispatchers"), func(t *testing.T) { manyUsers(t, n) })
	}
}

func manyUsers(t *testing.T, dispatchers int) {
	const rounds, nUsers, perUser = 4, 20, 4
	h := start(t, dispatchers)
	ctx := t.Context()

	var (
		mu          sync.Mutex
		ran         = map[string][]string{} // user key → job ids in run order
		outstanding = map[string]string{}   // user key → job not yet done
		problems    []string
	)
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan struct{})
	cons, err := h.js.Consumer(ctx, contract.StreamJobs, contract.ConsumerRunner)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(simDone)
		for simCtx.Err() == nil {
			// Hold every job of a batch before answering any: two jobs of one
			// user outstanding together show up here.
			batch, err := cons.Fetch(100, jetstream.FetchMaxWait(100*time.Millisecond))
			if err != nil {
				continue
			}
			var held []contract.Job
			var msgs []jetstream.Msg
			for m := range batch.Messages() {
				var job contract.Job
				if err := contract.Decode(m.Data(), &job); err != nil {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("job: %v", err))
					mu.Unlock()
					continue
				}
				k := job.User.Key()
				var stateProblem string
				if e, err := h.users.Get(simCtx, k); err != nil {
					stateProblem = fmt.Sprintf("job %s of %s: state: %v", job.ID, k, err)
				} else {
					var st contract.UserState
					if err := contract.Decode(e.Value(), &st); err != nil || st.State != contract.StateWorking || st.JobID != job.ID {
						stateProblem = fmt.Sprintf("job %s of %s: state got %+v (%v); want working on it", job.ID, k, st, err)
					}
				}
				mu.Lock()
				if stateProblem != "" {
					problems = append(problems, stateProblem)
				}
				if o := outstanding[k]; o != "" {
					problems = append(problems, fmt.Sprintf("job %s of %s while %s is outstanding", job.ID, k, o))
				}
				outstanding[k] = job.ID
				ran[k] = append(ran[k], job.ID)
				mu.Unlock()
				held = append(held, job)
				msgs = append(msgs, m)
			}
			for i, job := range held {
				ev := contract.Event{Kind: contract.KindDone, User: job.User, JobID: job.ID, Status: contract.StatusOK}
				mu.Lock()
				delete(outstanding, job.User.Key())
				mu.Unlock()
				if err := bus.PublishEvent(ctx, h.js, ev, contract.MsgID(job.User, job.ID, "done")); err != nil {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("done %s: %v", job.ID, err))
					mu.Unlock()
				}
				_ = msgs[i].Ack()
			}
		}
	}()

	// Rounds of fresh users: each round is another chance for a race to show.
	var users []contract.User
	for round := range rounds {
		var these []contract.User
		for i := range nUsers {
			these = append(these, user(t, fmt.Sprintf("r%d-u%02d", round, i)))
		}
		users = append(users, these...)
		// Every dispatcher is waiting for inbound messages: the round is
		// shared between them.
		natstest.CheckFor(t, wait, poll, func() error {
			c, err := h.js.Consumer(ctx, contract.StreamIn, contract.ConsumerDispatcher)
			if err != nil {
				return err
			}
			info, err := c.Info(ctx)
			if err != nil {
				return err
			}
			if info.NumWaiting < dispatchers {
				return fmt.Errorf("%d pull requests on %s; want %d, one per dispatcher", info.NumWaiting, contract.ConsumerDispatcher, dispatchers)
			}
			return nil
		})
		inbound := func(u contract.User, j int) (string, []byte, jetstream.PublishOpt) {
			id := fmt.Sprintf("%s-m%d", u.ID, j)
			in := contract.Inbound{ID: id, User: u, Text: "echo " + id, At: time.Now().UTC()}
			data, err := contract.Encode(&in)
			if err != nil {
				t.Error(err)
			}
			return contract.InboundSubject(u), data, jetstream.WithMsgID(contract.MsgID(u, id))
		}
		if round%2 == 0 {
			// Users at once, each waiting for every message's ack.
			var wg sync.WaitGroup
			for _, u := range these {
				wg.Go(func() {
					for j := range perUser {
						subject, data, opt := inbound(u, j)
						if _, err := h.js.Publish(ctx, subject, data, opt); err != nil {
							t.Errorf("publish: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
		} else {
			// One user after another, each sending a burst.
			for _, u := range these {
				var acks []jetstream.PubAckFuture
				for j := range perUser {
					subject, data, opt := inbound(u, j)
					f, err := h.js.PublishAsync(subject, data, opt)
					if err != nil {
						t.Fatalf("publish: %v", err)
					}
					acks = append(acks, f)
				}
				for _, f := range acks {
					select {
					case <-f.Ok():
					case err := <-f.Err():
						t.Fatalf("publish: %v", err)
					case <-time.After(wait):
						t.Fatal("publish: no ack")
					}
				}
			}
		}
		if t.Failed() {
			t.FailNow()
		}

		natstest.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
			mu.Lock()
			n := 0
			for _, ids := range ran {
				n += len(ids)
			}
			mu.Unlock()
			if want := len(users) * perUser; n < want {
				return fmt.Errorf("round %d: %d of %d jobs ran", round, n, want)
			}
			for _, u := range these {
				if st, _ := h.state(u); st.State != contract.StateIdle {
					return fmt.Errorf("%s: got state %+v; want idle", u, st)
				}
			}
			return nil
		})
	}
	stopSim()
	<-simDone

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	misordered := 0
	defer func() {
		if misordered > 0 {
			t.Errorf("%d of %d users' messages did not run each once in order", misordered, len(users))
		}
	}()
	for _, u := range users {
		var want []string
		for j := range perUser {
			want = append(want, fmt.Sprintf("%s-m%d", u.ID, j))
		}
		if got := ran[u.Key()]; !slices.Equal(got, want) {
			if misordered++; misordered <= 5 {
				t.Errorf("%s ran %q; want each once, in order: %q", u, got, want)
			}
		}
		if got := h.queued(u); len(got) != 0 {
			t.Errorf("%s queue at the end: got %q; want empty", u, got)
		}
		for _, n := range h.notices(u) {
			if !strings.HasSuffix(n, dispatcher.MsgQueued) && !strings.HasSuffix(n, " in line.") {
				t.Errorf("%s notice: got %q; want only queued notices (%q, or a place in line)", u, n, dispatcher.MsgQueued)
			}
		}
	}
}

// A message that arrives just as the run before it ends is never left
// waiting behind an idle user: the run's end and the queueing race on the
// same state entry. (The web chat hit this one time in four: the person saw
// a reply and answered at once.)
func TestMessageAsRunEndsIsNotStranded(t *testing.T) {
	h := start(t, 1)
	for i := range 60 {
		u := user(t, fmt.Sprint("racer", i))
		h.inboundHandled(h.send(u, "m1", "first"))
		h.waitState(u, contract.StateWorking, "m1")
		// The run's end and the next message, at the same moment.
		var wg sync.WaitGroup
		wg.Go(func() { h.done(u, "m1") })
		wg.Go(func() { h.send(u, "m2", "second") })
		wg.Wait()
		h.waitState(u, contract.StateWorking, "m2")
	}
}

// A crash between starting a queued message (its job published, the state
// saved) and removing it from the queue leaves it at the queue's head. When
// its run ends, the next message starts; the one that ran is not started
// again, which would leave the person working forever on a run that
// JetStream deduplicates away.
func TestStartedMessageLeftInQueue(t *testing.T) {
	h := start(t, 1)
	u := user(t, "alice")
	h.inboundHandled(h.send(u, "m1", "first"))
	h.send(u, "m2", "second")
	h.inboundHandled(h.send(u, "m3", "third"))
	if got := h.queued(u); !slices.Equal(got, []string{"m2", "m3"}) {
		t.Fatalf("queue %q; want m2, m3", got)
	}
	// What the crashed dispatcher left: m2 started, still queued.
	h.setState(u, func(st *contract.UserState) {
		st.JobID, st.Finished = "m2", append(st.Finished, "m1")
	})

	h.doneHandled(h.done(u, "m2"))
	h.waitState(u, contract.StateWorking, "m3")
	h.waitJobs(u, "m1", "m3")
	if got := h.queued(u); len(got) != 0 {
		t.Errorf("queue %q; want empty", got)
	}
}

// The same crash with nothing queued behind the started message: when its
// run ends the person is idle. A head the machine saw on an earlier pass
// of the compare-and-set loop is not kept once the queue is found empty,
// which left the person working on a job never published.
func TestStartedLastMessageLeftInQueue(t *testing.T) {
	h := start(t, 1)
	u := user(t, "alice")
	h.inboundHandled(h.send(u, "m1", "first"))
	h.inboundHandled(h.send(u, "m2", "second"))
	if got := h.queued(u); !slices.Equal(got, []string{"m2"}) {
		t.Fatalf("queue %q; want m2", got)
	}
	h.setState(u, func(st *contract.UserState) {
		st.JobID, st.Finished = "m2", append(st.Finished, "m1")
	})

	h.doneHandled(h.done(u, "m2"))
	h.waitState(u, contract.StateIdle, "")
	if got := h.queued(u); len(got) != 0 {
		t.Errorf("queue %q; want empty", got)
	}
}

// A crash can leave the state behind the runs: m2's run ended (its done is
// in) while the state still says m1 is running and m2 waits in the queue.
// When m1's done comes (again), m2 must not start a second time: the
// runner would never see its deduplicated job, and the user would wait
// for it forever.
func TestDoneAheadOfState(t *testing.T) {
	h := start(t, 1)
	u := user(t, "alice")
	h.inboundHandled(h.send(u, "m1", "first"))
	h.send(u, "m2", "second")
	h.inboundHandled(h.send(u, "m3", "third"))
	h.waitState(u, contract.StateWorking, "m1")

	h.doneHandled(h.done(u, "m2"))
	if st, _ := h.state(u); !slices.Contains(st.Finished, "m2") {
		t.Fatalf("after m2's done the state %+v does not count m2 finished", st)
	}
	h.doneHandled(h.done(u, "m1"))
	h.waitState(u, contract.StateWorking, "m3")
	h.waitJobs(u, "m1", "m3")
	if got := h.queued(u); len(got) != 0 {
		t.Errorf("queue %q; want empty", got)
	}
}

// A crash between storing "working on m2" and publishing m2's job leaves
// m2's only copy in the queue. When m1's done comes again, m2's start is
// repeated from the queue, not dropped as already started.
func TestStartCutShortIsRepeatedFromQueue(t *testing.T) {
	h := start(t, 1)
	u := user(t, "alice")
	h.inboundHandled(h.send(u, "m1", "first"))
	h.inboundHandled(h.send(u, "m2", "second"))
	// What the crashed dispatcher left: m1 ended, m2 current, no job yet.
	h.setState(u, func(st *contract.UserState) {
		st.JobID, st.Finished = "m2", append(st.Finished, "m1")
	})

	h.doneHandled(h.done(u, "m1"))
	h.waitJobs(u, "m1", "m2")
	if job := h.jobs(u)[1]; job.Text != "second" {
		t.Errorf("m2's job text %q; want %q", job.Text, "second")
	}
	h.waitState(u, contract.StateWorking, "m2")
	if got := h.queued(u); len(got) != 0 {
		t.Errorf("queue %q; want empty", got)
	}
}

// A plain message and its run's end read nothing back from JetStream
// once the dispatcher knows the person: it keeps the state it last wrote
// (a compare-and-set tells it when another dispatcher wrote since), and
// that the person's queue was empty.
func TestKnownUserReadsNothing(t *testing.T) {
	h := start(t, 1)
	u := user(t, "alice")
	var mu sync.Mutex
	reads := map[string]int{}
	sub, err := h.js.Conn().Subscribe("$JS.API.DIRECT.GET.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasPrefix(m.Subject, "$JS.API.DIRECT.GET.KV_users"):
			reads["users"]++
		case strings.HasPrefix(m.Subject, "$JS.API.DIRECT.GET.QUEUE"):
			reads["queue"]++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for i := range 3 {
		id := fmt.Sprintf("SM%d", i)
		h.inboundHandled(h.send(u, id, "echo hi"))
		h.waitJobs(u, jobIDsUpTo(i)...)
		h.doneHandled(h.done(u, id))
		if i == 0 {
			if err := h.js.Conn().Flush(); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			clear(reads) // a person met for the first time is read once
			mu.Unlock()
		}
	}
	if err := h.js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if reads["users"]+reads["queue"] != 0 {
		t.Errorf("two more messages and their ends read the state %d times and the queue %d times; want none", reads["users"], reads["queue"])
	}
}

func jobIDsUpTo(i int) []string {
	var ids []string
	for j := range i + 1 {
		ids = append(ids, fmt.Sprintf("SM%d", j))
	}
	return ids
}
