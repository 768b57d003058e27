// Package dispatcher keeps each user's state (idle, working,
// awaiting_approval) and queue. It decides which message runs next and
// publishes it as a job; it never runs anything itself.
//
// The decisions are internal/fsm's, a pure state machine; this package
// loads a user's state, feeds the machine one input, stores the new state by
// compare-and-set on the entry's revision, and carries out the effects. Every
// effect is idempotent (deduplicated publishes, deletes), so a dispatcher
// killed at any moment is repaired by the redelivery of its input, and any
// number of dispatchers may run at once. Waiting messages live in the QUEUE
// stream, whose per-subject limit is the queue limit; approval timeouts are
// JetStream message schedules in TIMERS.
package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// Replies of the dispatcher's own: the state machine's texts.
const (
	MsgEmpty     = fsm.MsgEmpty
	MsgQueued    = fsm.MsgQueued
	MsgQueueFull = fsm.MsgQueueFull
)

// Config of the dispatcher.
type Config struct {
	// ApprovalTimeout ends an unanswered approval request (default 30 min).
	ApprovalTimeout time.Duration
	// PermissionTimeout denies a permission question nobody answered
	// (default 10 min).
	PermissionTimeout time.Duration
	// DefaultMode is the permission mode of people who have not chosen one
	// (contract.ModeAsk, ModeAuto or ModePlan; default ModeAsk).
	DefaultMode string
	// Budgets bound what runs may cost; each job carries what is left.
	Budgets Budgets
	// Location is the time zone of the days and months of costs and
	// budgets; default the server's.
	Location *time.Location
	// Admins may pair people in, list and revoke them: people bucket keys
	// (contract.PersonKey, contract.AddressKey: "phone.15551234567",
	// "telegram.123456789").
	Admins []string
	// Agent is what the runners run, named as their Config.Agent names it:
	// contract.AgentClaude, AgentShell, or a command line; empty: Claude
	// Code. What mode, btw, steer, go, help and status say depends on it.
	Agent string
}

// Dispatcher routes inbound messages and starts queued ones.
type Dispatcher struct {
	cfg   Config
	js    jetstream.JetStream
	log   zerolog.Logger
	users jetstream.KeyValue
	// projects is the runner's registry of each person's projects.
	projects jetstream.KeyValue
	queue    jetstream.Stream
	timers   jetstream.Stream
	events   jetstream.Stream
	costs    *costs
	pairing  *contract.Pairing
	known    known // the states this dispatcher last read or wrote
}

// New returns a dispatcher using js, with cfg's defaults filled in; it
// refuses a bad cfg with Validate's error.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Dispatcher, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if js == nil {
		return nil, errors.New("dispatcher: no JetStream")
	}
	return &Dispatcher{cfg: cfg, js: js, log: log.With().Str("svc", "dispatcher").Logger()}, nil
}

// Run consumes inbound messages, done events and approval timeouts until
// ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	err := d.run(ctx)
	if err != nil && ctx.Err() != nil {
		return nil // stopped while starting: not a failure
	}
	return err
}

func (d *Dispatcher) run(ctx context.Context) error {
	var err error
	if d.users, err = d.js.KeyValue(ctx, contract.BucketUsers); err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketUsers, err)
	}
	if d.projects, err = d.js.KeyValue(ctx, contract.BucketProjects); err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketProjects, err)
	}
	if d.pairing, err = contract.OpenPairing(ctx, d.js); err != nil {
		return err
	}
	d.costs = &costs{loc: d.cfg.Location, budgets: d.cfg.Budgets}
	if d.costs.kv, err = d.js.KeyValue(ctx, contract.BucketCosts); err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketCosts, err)
	}
	for _, s := range []struct {
		name string
		into *jetstream.Stream
	}{{contract.StreamQueue, &d.queue}, {contract.StreamTimers, &d.timers}, {contract.StreamEvents, &d.events}} {
		if *s.into, err = d.js.Stream(ctx, s.name); err != nil {
			return fmt.Errorf("stream %s: %w", s.name, err)
		}
	}
	type consumer struct {
		cons jetstream.Consumer
		h    contract.Handler
	}
	var consumers []consumer
	for _, c := range []struct {
		stream, name string
		h            contract.Handler
	}{
		{contract.StreamIn, contract.ConsumerDispatcher, d.handleInbound},
		{contract.StreamEvents, contract.ConsumerDispatcherDone, d.handleDone},
		{contract.StreamTimers, contract.ConsumerTimers, d.handleTimeout},
	} {
		cons, err := d.js.Consumer(ctx, c.stream, c.name)
		if err != nil {
			return fmt.Errorf("consumer %s: %w", c.name, err)
		}
		consumers = append(consumers, consumer{cons, c.h})
	}
	// Every consumer is found before any consumes, so a failed start
	// leaves nothing running.
	g, ctx := errgroup.WithContext(ctx)
	for _, c := range consumers {
		g.Go(func() error { return contract.Consume(ctx, d.js, c.cons, c.h, d.log) })
	}
	return g.Wait()
}

// handleInbound routes one message a person sent: a keyword or a message
// for the agent.
func (d *Dispatcher) handleInbound(ctx context.Context, msg jetstream.Msg) error {
	var in contract.Inbound
	if err := contract.Decode(msg.Data(), &in); err != nil {
		return err
	}
	if in.Paired {
		return d.notice(ctx, in.User, in.ID, "welcome", MsgWelcome+fsm.HelpFor(d.agent()))
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Media) == 0 {
		return d.notice(ctx, in.User, in.ID, "empty", fsm.MsgEmpty)
	}
	input := fsm.Input{Kind: fsm.Message, ID: in.ID, Text: in.Text, Media: len(in.Media) > 0}
	if kw, arg, ok := fsm.ParseKeyword(in.Text); ok && len(in.Media) == 0 {
		input.Kind, input.Keyword, input.Arg = fsm.Keyword, kw, arg
	}
	if err := d.checkProject(ctx, in.User, &input); err != nil {
		return err
	}
	return d.apply(ctx, in.User, input, &in)
}

// handleDone starts the user's next message, or makes them idle, when a run
// ends; and waits for the person's answer when a run asks a question.
func (d *Dispatcher) handleDone(ctx context.Context, msg jetstream.Msg) error {
	var ev contract.Event
	if err := contract.Decode(msg.Data(), &ev); err != nil {
		return err
	}
	if ev.Kind == contract.KindQuestion {
		return d.apply(ctx, ev.User, fsm.Input{Kind: fsm.Question, ID: ev.JobID, Question: ev.Question, Text: ev.Text}, nil)
	}
	return d.takeDone(ctx, ev)
}

// takeDone takes a run's end in: its cost, then the state machine. Both
// are idempotent: an end taken in twice counts once.
func (d *Dispatcher) takeDone(ctx context.Context, ev contract.Event) error {
	if err := d.costs.record(ctx, ev); err != nil {
		return err
	}
	return d.apply(ctx, ev.User, fsm.Input{Kind: fsm.Done, ID: ev.JobID, Approval: ev.Approval}, nil)
}

// handleTimeout ends an approval request or a question nobody answered,
// and runs scheduled messages.
func (d *Dispatcher) handleTimeout(ctx context.Context, msg jetstream.Msg) error {
	if strings.HasSuffix(msg.Subject(), ".run") {
		return d.handleScheduled(ctx, msg)
	}
	var t contract.Timer
	if err := contract.Decode(msg.Data(), &t); err != nil {
		return err
	}
	in := fsm.Input{Kind: fsm.Timeout, ID: t.JobID}
	if t.Kind == contract.TimerPermission {
		in.Question = max(t.Question, 1)
	}
	return d.apply(ctx, t.User, in, nil)
}

// apply feeds one input to the user's state machine, stores the new state
// by compare-and-set, and carries out the effects. in is the inbound
// message behind the input, if any.
func (d *Dispatcher) apply(ctx context.Context, u contract.User, input fsm.Input, in *contract.Inbound) error {
	log := zerolog.Ctx(ctx).With().Str("user", u.Key()).Str("job_id", input.ID).Logger()
	input.Agent = d.agent()
	for {
		st, rev, mem, err := d.load(ctx, u)
		if err != nil {
			return err
		}
		if in != nil && slices.Contains(st.Finished, in.ID) {
			// Redelivered after its run ended (its acknowledgement was lost).
			log.Info().Msg("message already ran; dropping the redelivery")
			return nil
		}
		if in != nil && st.State == contract.StateWorking {
			if caught, err := d.catchUp(ctx, u, st); err != nil {
				return err
			} else if caught {
				continue
			}
		}
		var head *queued
		empty := false // the queue is empty at rev
		if needsHead(st, input) {
			// Only a done of the running job ends it; any other input that
			// looks at the queue while a job runs may repeat its start.
			keepCurrent := st.Running() && (input.Kind != fsm.Done || input.ID != st.JobID)
			if mem == nil || !mem.empty {
				if head, err = d.head(ctx, u, st, keepCurrent); err != nil {
					return err
				}
			}
			if head != nil {
				input.QueueHead = head.in.ID
			}
			empty = head == nil
		}
		next, effects := fsm.Step(st, input)
		if st.Running() && (!next.Running() || next.JobID != st.JobID) {
			next.Finished = appendFinished(st.Finished, st.JobID) // ended or cancelled
		}
		if input.Kind == fsm.Done && input.ID != "" && input.ID != st.JobID && !slices.Contains(next.Finished, input.ID) {
			// A run that ended while the state (behind after a crash) did not
			// know it yet: its message must not start again from the queue.
			next.Finished = appendFinished(next.Finished, input.ID)
		}
		if next.State != st.State || next.JobID != st.JobID {
			next.Since = time.Now().UTC()
		}
		switch {
		case changed(st, next):
			if rev, err = d.save(ctx, u, next, rev); conflict(err) {
				continue // another dispatcher changed this user: look again
			} else if err != nil {
				return err
			}
			if err := d.announce(ctx, log, u, head, st, next, rev); err != nil {
				return err
			}
		case mem != nil:
			// Nothing to write, decided on the state as this dispatcher
			// last knew it, which another may have changed since: decide
			// again on the stored state.
			d.known.forget(u)
			continue
		}
		if empty {
			d.known.emptyAt(u, rev)
		}
		return d.carryOut(ctx, &step{u: u, log: log, input: input, in: in, head: head, before: st, now: next, rev: rev, effects: effects})
	}
}

// announce publishes the state event of a move from st to next, stored at
// rev, if the state or its job changed.
func (d *Dispatcher) announce(ctx context.Context, log zerolog.Logger, u contract.User, head *queued, st, next contract.UserState, rev uint64) error {
	if next.State == st.State && next.JobID == st.JobID {
		return nil
	}
	log.Info().Str("from", st.State).Str("to", next.State).Str("job", next.JobID).Msg("state")
	ev := contract.Event{Kind: contract.KindState, User: u, JobID: next.JobID, From: st.State, To: next.State}
	if ev.JobID == "" {
		ev.JobID = st.JobID
	}
	return contract.PublishEvent(head.traced(ctx, ev.JobID), d.js, ev, contract.MsgID(u, ev.JobID, "state", next.State, fmt.Sprint(rev)))
}

// catchUp takes in the end or the question of the run st says is under
// way, if the runner published one that this dispatcher's other consumer
// has not taken in yet, and reports whether it did. Egress tells the
// person as that consumer reads the event: a message the person sends at
// once (approve, reject, an answer) can come first, and must meet the
// state the person saw.
func (d *Dispatcher) catchUp(ctx context.Context, u contract.User, st contract.UserState) (bool, error) {
	if ev, ok := d.lastEvent(ctx, u, contract.KindDone, st.JobID); ok {
		return true, d.takeDone(ctx, ev)
	}
	if ev, ok := d.lastEvent(ctx, u, contract.KindQuestion, st.JobID); ok && ev.Question > st.Question {
		return true, d.apply(ctx, u, fsm.Input{Kind: fsm.Question, ID: ev.JobID, Question: ev.Question, Text: ev.Text}, nil)
	}
	return false, nil
}

// conflict reports whether a save lost a race with another writer.
func conflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}

// needsHead reports whether the machine needs the queue's head for input.
func needsHead(st contract.UserState, input fsm.Input) bool {
	idle := st.State == contract.StateIdle || st.State == ""
	switch input.Kind {
	case fsm.Message:
		return idle
	case fsm.Keyword:
		// go, btw, use and clone may turn out to be messages (or jobs); a
		// use is refused while messages wait.
		return (idle && (input.Keyword == fsm.Go || input.Keyword == fsm.Btw || input.Keyword == fsm.Clone)) ||
			input.Keyword == fsm.Use
	case fsm.Question:
		return false
	}
	return true
}

// changed reports whether now differs from before in anything stored.
// The machine hands back the maps and slices it does not change as they
// were, and never an empty map for none, so a step that changes nothing
// compares equal.
func changed(before, now contract.UserState) bool {
	return !reflect.DeepEqual(before, now)
}

// step is one input taken in: the input and the inbound message behind
// it (in, if any), the queue's head the machine saw (if any), the user's
// state before and now (stored at rev), and the effects to carry out.
type step struct {
	u       contract.User
	log     zerolog.Logger
	input   fsm.Input
	in      *contract.Inbound
	head    *queued
	before  contract.UserState
	now     contract.UserState
	rev     uint64
	effects []fsm.Effect
}

// ref is what the notice of effect i is deduplicated by, with the
// input's id.
func (s *step) ref(i int) string {
	ref := "in"
	switch s.input.Kind {
	case fsm.Done:
		ref = "done"
	case fsm.Timeout:
		ref = "timeout"
	case fsm.Kick:
		ref = "kick:" + s.input.QueueHead
	}
	return ref + ":" + fmt.Sprint(i)
}

// carryOut performs the machine's effects in order.
func (d *Dispatcher) carryOut(ctx context.Context, s *step) error {
	kick := false
	for i, e := range s.effects {
		again, err := d.effect(ctx, s, i, e)
		if err != nil {
			return err
		}
		kick = kick || again
	}
	if kick {
		return d.apply(ctx, s.u, fsm.Input{Kind: fsm.Kick}, nil)
	}
	return nil
}

// effect performs effect e, the i-th of step s. kick: the user must be
// looked at again once the step is done.
func (d *Dispatcher) effect(ctx context.Context, s *step, i int, e fsm.Effect) (kick bool, err error) {
	u, id := s.u, s.input.ID
	switch e.Kind {
	case fsm.Start:
		err = d.start(ctx, s.log, u, e, s.in, s.head, s.now.Branches)
	case fsm.Enqueue:
		return d.queueBehind(ctx, s)
	case fsm.Notice:
		err = d.notice(ctx, u, id, s.ref(i), e.Text)
	case fsm.TimedOut:
		err = d.notice(ctx, u, id, s.ref(i), d.timedOut(e.Question))
	case fsm.ClearQueue:
		if err = d.queue.Purge(ctx, jetstream.WithPurgeSubject(contract.QueueSubject(u))); err != nil {
			err = fmt.Errorf("clear queue: %w", err)
		}
	case fsm.CancelRun:
		s.log.Info().Str("cancel", e.ID).Msg("cancelling run")
		err = d.js.Conn().PublishMsg(contract.NewMsg(ctx, contract.CancelSubject(u), []byte(e.ID)))
	case fsm.ScheduleTimeout:
		err = d.scheduleTimeout(ctx, u, e.ID, e.Question, s.rev)
	case fsm.CancelTimeout:
		err = d.cancelTimeout(ctx, u, e.Question)
	case fsm.Answer:
		s.log.Info().Int("question", e.Question).Str("answer", e.Answer).Msg("question answered")
		err = contract.PublishEvent(ctx, d.js, contract.Event{Kind: contract.KindAnswer, User: u, JobID: e.ID,
			Question: e.Question, Answer: e.Answer, Text: e.Text}, contract.MsgID(u, e.ID, "answer", fmt.Sprint(e.Question)))
	case fsm.SteerRun:
		s.log.Info().Str("steer", id).Int("len", len(e.Text)).Msg("message added to the run")
		err = contract.PublishEvent(ctx, d.js, contract.Event{Kind: contract.KindSteer, User: u, JobID: e.ID, Text: e.Text},
			contract.MsgID(u, e.ID, "steer", id))
	case fsm.ReportStatus, fsm.ReportCost, fsm.AddSchedule, fsm.ListSchedules, fsm.RemoveSchedule, fsm.Admin, fsm.ListProjects:
		var text string
		if text, err = d.reply(ctx, u, s.before, id, e); err == nil {
			err = d.notice(ctx, u, id, s.ref(i), text)
		}
	case fsm.NextPage:
		err = contract.PublishEvent(ctx, d.js, contract.Event{Kind: contract.KindMore, User: u, JobID: id},
			contract.MsgID(u, id, "more"))
	}
	return false, err
}

// queueBehind puts step s's message in the queue, behind the run, and
// reports a kick when the user must be looked at again.
func (d *Dispatcher) queueBehind(ctx context.Context, s *step) (kick bool, err error) {
	queued, err := d.enqueue(ctx, s.log, s.u, s.in)
	if !queued || err != nil {
		return false, err
	}
	// Write the state again at the revision this decision was made on. If
	// that fails, the user moved meanwhile — maybe a run ended without
	// seeing this message — so look again.
	s.now.Queued = s.in.ID
	if _, err = d.save(ctx, s.u, s.now, s.rev); conflict(err) {
		return true, nil
	}
	return false, err
}

// timedOut is what the person is told when nobody answered in time: the
// approval request (question 0), or a question.
func (d *Dispatcher) timedOut(question int) string {
	if question > 0 {
		return fmt.Sprintf("No answer in %s, so Claude was told no.", humanDuration(d.cfg.PermissionTimeout))
	}
	return fmt.Sprintf("No answer to the approval request in %s, so I stopped waiting. The changes stay in your workspace, uncommitted.",
		humanDuration(d.cfg.ApprovalTimeout))
}

// reply is the answer to a keyword that asks something of the dispatcher
// (status, cost, schedules, an admin's): st is the state it was sent in,
// msgID its message's id.
func (d *Dispatcher) reply(ctx context.Context, u contract.User, st contract.UserState, msgID string, e fsm.Effect) (string, error) {
	switch e.Kind {
	case fsm.ReportStatus:
		return d.status(ctx, u, st), nil
	case fsm.ReportCost:
		return d.costs.report(ctx, u)
	case fsm.AddSchedule:
		return d.schedule(ctx, u, st, msgID, e.Action, e.Text)
	case fsm.ListSchedules:
		return d.listSchedules(ctx, u)
	case fsm.RemoveSchedule:
		return d.unschedule(ctx, u, e.Text)
	case fsm.ListProjects:
		return d.listProjects(ctx, u, st)
	default:
		return d.admin(ctx, u, e.Action, e.Text)
	}
}

// start publishes a job. Publishing is deduplicated by the job's id, so
// starting twice is harmless.
//
// branches is the person's setting: messages run on branches of their own.
// (A start repeated after a crash takes the setting as it is then.)
func (d *Dispatcher) start(ctx context.Context, log zerolog.Logger, u contract.User, e fsm.Effect, in *contract.Inbound, head *queued, branches bool) error {
	job := contract.Job{ID: e.ID, User: u, Action: e.Action, NewSession: e.NewSession, At: time.Now().UTC(), Mode: d.mode(e.Mode),
		Project: e.Project}
	fromQueue := e.Dequeue && head != nil && head.in.ID == e.ID
	switch {
	case e.Action == fsm.Go:
		// Carry out the plan, in the person's usual mode.
		job.Action, job.Text = "", fsm.GoPrompt
		if job.Mode == contract.ModePlan {
			job.Mode = contract.ModeAsk
		}
	case e.Action != "":
		// An answer to an approval request needs no message text.
	case fromQueue:
		job.Text, job.Media, job.At = head.in.Text, head.in.Media, head.in.At
	case in != nil && in.ID == e.ID:
		job.Text, job.Media, job.At = in.Text, in.Media, in.At
	default:
		return nil // neither queued nor at hand: it was published before
	}
	if kw, arg, ok := fsm.ParseKeyword(job.Text); ok && kw == fsm.Clone && job.Action == "" && len(job.Media) == 0 {
		// The runner clones; checked before it was queued.
		url, name, err := cloneArgs(arg)
		if err != nil {
			return d.notice(ctx, u, e.ID, "clone", err.Error()+".")
		}
		job.Action, job.Text = contract.ActionClone, url+" "+name
	}
	if kw, arg, ok := fsm.ParseKeyword(job.Text); ok && kw == fsm.Btw && job.Action == "" && d.agent() != fsm.AgentClaude {
		// An agent that takes no messages while it works runs a btw's
		// words in their turn, as a message of their own.
		job.Text = arg
	}
	if job.Action == "" {
		job.Worktree = branches
		b, err := d.costs.budget(ctx, u)
		if err != nil {
			return err
		}
		job.Budget = b
	}
	data, err := contract.Encode(&job)
	if err != nil {
		return err
	}
	if fromQueue {
		// The job goes on the queued message's journey, not on that of
		// the input that started it.
		ctx = contract.WithTrace(ctx, head.trace)
	}
	if _, err := contract.Publish(ctx, d.js, contract.JobSubject(u), data, contract.MsgID(u, e.ID, "job")); err != nil {
		return fmt.Errorf("publish job: %w", err)
	}
	log.Info().Str("started", e.ID).Str("started_trace", contract.TraceFrom(ctx)).Str("action", e.Action).
		Bool("from_queue", fromQueue).Msg("job published")
	if fromQueue {
		if err := d.queue.DeleteMsg(ctx, head.seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("dequeue: %w", err)
		}
	}
	return nil
}

// enqueue stores a message behind the user's current run and tells them;
// the stream refuses it when the queue is full.
func (d *Dispatcher) enqueue(ctx context.Context, log zerolog.Logger, u contract.User, in *contract.Inbound) (bool, error) {
	if in == nil {
		return false, errors.New("enqueue: no message")
	}
	data, err := contract.Encode(in)
	if err != nil {
		return false, err
	}
	ack, err := contract.Publish(ctx, d.js, contract.QueueSubject(u), data, contract.MsgID(u, in.ID))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == errMaxMsgsPerSubject {
		log.Info().Msg("queue full")
		return false, d.notice(ctx, u, in.ID, "queue", fsm.MsgQueueFull)
	}
	if err != nil {
		return false, fmt.Errorf("enqueue: %w", err)
	}
	if !ack.Duplicate {
		log.Info().Uint64("queue_seq", ack.Sequence).Msg("queued")
	}
	return true, d.notice(ctx, u, in.ID, "queue", queuedText(d.queueDepth(ctx, u)))
}

// queuedText tells a message's place in the queue: the first waiting
// runs next, the others are 2nd, 3rd… in line.
func queuedText(place uint64) string {
	if place <= 1 {
		return fsm.MsgQueued
	}
	return fmt.Sprintf(fsm.MsgQueuedPlace, ordinal(place))
}

// ordinal writes 2 as "2nd", 11 as "11th", 23 as "23rd".
func ordinal(n uint64) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprint(n) + suffix
}

// errMaxMsgsPerSubject is the server's answer to a publish past a subject's
// MaxMsgsPerSubject with DiscardNewPerSubject: the queue is full.
const errMaxMsgsPerSubject jetstream.ErrorCode = 10077

// mode is the permission mode a job runs in: the person's, or the default.
func (d *Dispatcher) mode(m string) string {
	if m == "" {
		return d.cfg.DefaultMode
	}
	return m
}

// agent is what the runners run, as the state machine tells agents apart.
func (d *Dispatcher) agent() string {
	switch d.cfg.Agent {
	case "", contract.AgentClaude:
		return fsm.AgentClaude
	case contract.AgentShell:
		return fsm.AgentShell
	}
	return fsm.AgentCommand
}

// scheduleTimeout arms the timeout of a job's approval request (question
// 0) or of its permission question as a message schedule; it survives
// restarts because the stream holds it. rev is the revision of the state
// that armed it: the same job may arm the same timeout again (changes
// parked by use and brought back), and only a repeat of this publish may
// be deduplicated.
func (d *Dispatcher) scheduleTimeout(ctx context.Context, u contract.User, jobID string, question int, rev uint64) error {
	t := contract.Timer{User: u, JobID: jobID}
	subject, after := contract.ApprovalScheduleSubject(u), d.cfg.ApprovalTimeout
	if question > 0 {
		t.Kind, t.Question = contract.TimerPermission, question
		subject, after = contract.PermissionScheduleSubject(u), d.cfg.PermissionTimeout
	}
	data, err := contract.Encode(&t)
	if err != nil {
		return err
	}
	// Schedules are kept to the second: round up, never fire early. The
	// server copies the trace header onto the message that fires.
	at := time.Now().Add(after).Truncate(time.Second).Add(time.Second)
	msgID := contract.MsgID(u, jobID, "timeout", fmt.Sprint(question), fmt.Sprint(rev))
	if _, err := contract.Publish(ctx, d.js, subject, data, msgID,
		jetstream.WithScheduleAt(at), jetstream.WithScheduleTarget(contract.ApprovalExpiredSubject(u))); err != nil {
		return fmt.Errorf("schedule timeout: %w", err)
	}
	return nil
}

// cancelTimeout disarms the timeout of the approval request (question 0)
// or of the permission question.
func (d *Dispatcher) cancelTimeout(ctx context.Context, u contract.User, question int) error {
	subject := contract.ApprovalScheduleSubject(u)
	if question > 0 {
		subject = contract.PermissionScheduleSubject(u)
	}
	if err := d.timers.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return fmt.Errorf("cancel timeout: %w", err)
	}
	return nil
}

// status describes what is happening for the person.
func (d *Dispatcher) status(ctx context.Context, u contract.User, st contract.UserState) string {
	var b strings.Builder
	ago := func(t time.Time) string { return time.Since(t).Round(time.Second).String() }
	switch st.State {
	case contract.StateWorking:
		// The run's time, from its start: Since restarts when a question
		// is answered.
		began, started := st.Since, contract.Event{}
		if ev, ok := d.lastEvent(ctx, u, contract.KindStarted, st.JobID); ok {
			started = ev
			if !ev.At.IsZero() && ev.At.Before(began) {
				began = ev.At
			}
		}
		fmt.Fprintf(&b, "Working for %s", ago(began))
		if started.Text != "" {
			fmt.Fprintf(&b, " on: %s", started.Text)
		}
		b.WriteString(".")
		if ev, ok := d.lastEvent(ctx, u, contract.KindProgress, st.JobID); ok {
			fmt.Fprintf(&b, "\nLast step: %s (%s ago).", ev.Text, ago(ev.At))
		}
	case contract.StateAwaitingApproval:
		fmt.Fprintf(&b, "Waiting for your approval for %s. Reply approve or reject.", ago(st.Since))
	case contract.StateAwaitingPermission:
		fmt.Fprintf(&b, "Claude is waiting for your answer (for %s)", ago(st.Since))
		if ev, ok := d.lastEvent(ctx, u, contract.KindQuestion, st.JobID); ok && ev.Question == st.Question {
			fmt.Fprintf(&b, ":\n%s", ev.Text)
		} else {
			b.WriteString(". " + contract.QuestionPrompt)
		}
	default:
		b.WriteString("Idle: nothing is running.")
	}
	if st.Project != "" || len(st.Parked) > 0 {
		fmt.Fprintf(&b, "\nProject: %s.", contract.ProjectOf(st.Project))
		if n := len(st.Parked); n > 0 {
			fmt.Fprintf(&b, " Changes wait for your approval in %s (reply projects).", plural(n, "other project"))
		}
	}
	b.WriteString("\n" + fsm.ModeStatus(d.agent(), d.mode(st.Mode)))
	if st.Steer && d.agent() == fsm.AgentClaude {
		b.WriteString(" Messages sent while working are added to the run.")
	}
	if n := d.queueDepth(ctx, u); n > 0 {
		fmt.Fprintf(&b, "\n%s waiting.", plural(int(n), "message"))
	}
	return b.String()
}

// humanDuration writes 30m0s as "30 minutes".
func humanDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0 && d >= time.Hour:
		return plural(int(d/time.Hour), "hour")
	case d%time.Minute == 0 && d >= time.Minute:
		return plural(int(d/time.Minute), "minute")
	}
	return plural(int(d.Round(time.Second)/time.Second), "second")
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// lastEvent is the user's last event of a kind, if it is about job.
func (d *Dispatcher) lastEvent(ctx context.Context, u contract.User, kind contract.EventKind, job string) (contract.Event, bool) {
	var ev contract.Event
	raw, err := d.events.GetLastMsgForSubject(ctx, contract.EventSubject(u, kind))
	if err != nil || contract.Decode(raw.Data, &ev) != nil || ev.JobID != job {
		return ev, false
	}
	return ev, true
}

func (d *Dispatcher) queueDepth(ctx context.Context, u contract.User) uint64 {
	subj := contract.QueueSubject(u)
	info, err := d.queue.Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		return 0
	}
	return info.State.Subjects[subj]
}

// appendFinished remembers a finished job id, keeping the newest
// contract.FinishedKept.
func appendFinished(ids []string, id string) []string {
	ids = append(slices.Clone(ids), id)
	if n := len(ids) - contract.FinishedKept; n > 0 {
		ids = ids[n:]
	}
	return ids
}

// queued is a message in the user's queue.
type queued struct {
	in    contract.Inbound
	seq   uint64
	trace string // its trace id, from its header
}

// traced is ctx for publishing about job: with the queued message's trace
// when job is that message (it is starting), else ctx as it is.
func (q *queued) traced(ctx context.Context, job string) context.Context {
	if q == nil || q.in.ID != job {
		return ctx
	}
	return contract.WithTrace(ctx, q.trace)
}

// head is the oldest waiting message of u, or nil. A message that already
// ran (one that ended, or the current job when it is ending) is removed
// on the way: a crash between publishing its job and dequeuing it left it
// there, and starting it again would wait forever for a run JetStream
// deduplicates. With keepCurrent the current job stays: its start is being
// repeated, and a crash between storing the state and publishing the job
// left its only copy in the queue.
func (d *Dispatcher) head(ctx context.Context, u contract.User, st contract.UserState, keepCurrent bool) (*queued, error) {
	for {
		raw, err := d.queue.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(contract.QueueSubject(u)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("queue head: %w", err)
		}
		var in contract.Inbound
		err = contract.Decode(raw.Data, &in)
		trace := contract.Trace(raw.Header)
		log := contract.TraceLog(d.log, trace)
		switch {
		case err != nil:
			// A message nobody can read must not block the queue forever.
			log.Error().Err(err).Str("user", u.Key()).Uint64("seq", raw.Sequence).Msg("dropping unreadable queued message")
		case (in.ID == st.JobID && !keepCurrent) || slices.Contains(st.Finished, in.ID):
			log.Info().Str("user", u.Key()).Str("job_id", in.ID).Msg("dropping a queued message that already started")
		default:
			return &queued{in: in, seq: raw.Sequence, trace: trace}, nil
		}
		if err := d.queue.DeleteMsg(ctx, raw.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, fmt.Errorf("dequeue: %w", err)
		}
	}
}

// load reads a user's state: from memory when this dispatcher knows it
// (then mem is what it knows), else from the bucket. A user never seen is
// idle at revision 0.
func (d *Dispatcher) load(ctx context.Context, u contract.User) (st contract.UserState, rev uint64, mem *knownState, err error) {
	if k, ok := d.known.get(u); ok {
		if err := contract.Decode(k.data, &st); err == nil {
			return st, k.rev, &k, nil
		}
		d.known.forget(u)
	}
	e, err := d.users.Get(ctx, u.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return contract.UserState{State: contract.StateIdle}, 0, nil, nil
	}
	if err != nil {
		return st, 0, nil, fmt.Errorf("load state: %w", err)
	}
	if err := contract.Decode(e.Value(), &st); err != nil {
		return st, 0, nil, fmt.Errorf("state of %s: %w", u.Key(), err)
	}
	d.known.put(u, e.Value(), e.Revision())
	return st, e.Revision(), nil, nil
}

// save writes a user's state if it is still at revision rev, and returns
// the new revision.
func (d *Dispatcher) save(ctx context.Context, u contract.User, st contract.UserState, rev uint64) (uint64, error) {
	data, err := contract.Encode(&st)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		rev, err = d.users.Create(ctx, u.Key(), data)
	} else {
		rev, err = d.users.Update(ctx, u.Key(), data, rev)
	}
	if err != nil {
		d.known.forget(u)
		return 0, err
	}
	d.known.put(u, data, rev)
	return rev, nil
}

// notice sends the person a short text of textslash's own about message
// id; ref makes it unique, so a redelivered input does not repeat it.
func (d *Dispatcher) notice(ctx context.Context, u contract.User, id, ref, text string) error {
	return contract.PublishEvent(ctx, d.js, contract.Event{Kind: contract.KindNotice, User: u, JobID: id, Text: text},
		contract.MsgID(u, id, "notice", ref))
}
