// Package dispatcher keeps each person's state and queue. It decides
// which message runs next and publishes it as a job; it never runs
// anything itself. The states are contract.StateIdle, StateWorking,
// StateAwaitingApproval (a run left changes for the person to approve or
// reject) and StateAwaitingPermission (the running agent waits for the
// person's answer to its question).
//
// The decisions are internal/fsm's, a pure state machine; this package
// loads a user's state, feeds the machine one input, stores the new state by
// compare-and-set on the entry's revision, and carries out the effects. Every
// effect is idempotent (deduplicated publishes, deletes), so a dispatcher
// killed at any moment is repaired by the redelivery of its input, and any
// number of dispatchers may run at once. Waiting messages live in the QUEUE
// stream, whose per-subject limit is the queue limit; approval and question
// timeouts are JetStream message schedules in TIMERS.
//
// Its files: dispatcher.go the service and what its consumers take in;
// order.go a person's messages routed in IN's order across crashes;
// apply.go the loop that feeds the machine an input; effects.go the
// effects carried out, a job's start among them; store.go the state in
// the users bucket (known.go: the copy in memory); queue.go the waiting
// messages; timers.go the timeouts; status.go the status text; costs.go,
// schedules.go, projects.go and people.go what their keywords ask for.
package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// Replies of the dispatcher's own: the state machine's texts.
const (
	MsgEmpty     = fsm.MsgEmpty
	MsgQueued    = fsm.MsgQueued
	MsgQueueFull = fsm.MsgQueueFull
)

// Dispatcher routes inbound messages and starts queued ones.
type Dispatcher struct {
	cfg   Config
	js    jetstream.JetStream
	log   zerolog.Logger
	users jetstream.KeyValue
	// projects is the runner's registry of each person's projects.
	projects jetstream.KeyValue
	in       jetstream.Stream
	queue    jetstream.Stream
	timers   jetstream.Stream
	events   jetstream.Stream
	costs    *costs
	pairing  *access.Pairing
	known    known  // the states this dispatcher last read or wrote
	routed   routed // each person's last IN message this dispatcher routed
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

// Run consumes inbound messages, done events and approval timeouts, and
// serves the pairing service (access.ServePairing), until ctx ends.
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
	if d.pairing, err = access.OpenPairing(ctx, d.js); err != nil {
		return err
	}
	d.costs = &costs{loc: d.cfg.Location, budgets: d.cfg.Budgets, agent: d.cfg.Agent, seed: maphash.MakeSeed()}
	if d.costs.kv, err = d.js.KeyValue(ctx, contract.BucketCosts); err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketCosts, err)
	}
	for _, s := range []struct {
		name string
		into *jetstream.Stream
	}{{contract.StreamIn, &d.in}, {contract.StreamQueue, &d.queue}, {contract.StreamTimers, &d.timers}, {contract.StreamEvents, &d.events}} {
		if *s.into, err = d.js.Stream(ctx, s.name); err != nil {
			return fmt.Errorf("stream %s: %w", s.name, err)
		}
	}
	type consumer struct {
		cons jetstream.Consumer
		h    bus.Handler
	}
	var consumers []consumer
	for _, c := range []struct {
		stream, name string
		h            bus.Handler
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
		g.Go(func() error { return bus.Consume(ctx, d.js, c.cons, c.h, d.log) })
	}
	// Codes are the dispatcher's: channels ask it to pair a stranger in.
	g.Go(func() error { return access.ServePairing(ctx, d.js.Conn(), d.pairing, d.log) })
	return g.Wait()
}

// handleInbound routes one message a person sent, after theirs that came
// before it and are still waiting (order.go).
func (d *Dispatcher) handleInbound(ctx context.Context, msg jetstream.Msg) error {
	var in contract.Inbound
	if err := contract.Decode(msg.Data(), &in); err != nil {
		return err
	}
	if err := d.own(ctx, msg.Subject(), in); err != nil {
		return err
	}
	md, err := msg.Metadata()
	if err != nil {
		return err
	}
	if err := d.routeEarlier(ctx, in.User, msg.Subject(), md.Sequence.Stream); err != nil {
		return err
	}
	if err := d.route(ctx, in, md.Sequence.Stream); err != nil {
		return err
	}
	d.routed.note(in.User, md.Sequence.Stream)
	return nil
}

// own refuses a message whose payload names another person than its
// subject (contract.InboundFrom): a channel's login publishing as somebody
// of another channel, or as an admin. Refused, it is terminated and runs
// nothing.
func (d *Dispatcher) own(ctx context.Context, subject string, in contract.Inbound) error {
	err := contract.InboundFrom(subject, in.User)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Str("subject", subject).Str("payload_user", in.User.Key()).Str("job_id", in.ID).
			Msg("inbound refused: its payload names another person than its subject (a channel acting as somebody else's?)")
	}
	return err
}

// route routes in, the message at seq in IN: a keyword or a message for
// the agent.
func (d *Dispatcher) route(ctx context.Context, in contract.Inbound, seq uint64) error {
	if in.Paired {
		return d.notice(ctx, in.User, in.ID, "welcome", MsgWelcome+fsm.HelpFor(d.agent()))
	}
	if strings.TrimSpace(in.Text) == "" && len(in.Media) == 0 {
		return d.notice(ctx, in.User, in.ID, "empty", fsm.MsgEmpty)
	}
	input := fsm.Input{Kind: fsm.Message, ID: in.ID, Text: in.Text, Media: len(in.Media) > 0, InSeq: seq}
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
	return d.apply(ctx, ev.User, fsm.Input{Kind: fsm.Done, ID: ev.JobID, Approval: ev.Approval, WarmUntil: ev.WarmUntil, Background: ev.Background, Sandbox: ev.Sandbox}, nil)
}

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
	if contract.IsACPAgent(d.cfg.Agent) {
		return fsm.AgentACP
	}
	return fsm.AgentCommand
}
