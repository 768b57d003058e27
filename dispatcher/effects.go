// Carrying out the state machine's effects: a step's effects in order,
// each one's publish or delete, the replies to keywords that ask the
// dispatcher something, a job's start, and notices.

package dispatcher

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

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
		err = d.js.Conn().PublishMsg(bus.NewMsg(ctx, contract.CancelSubject(u), []byte(e.ID)))
	case fsm.ScheduleTimeout:
		err = d.scheduleTimeout(ctx, u, e.ID, e.Question, s.rev)
	case fsm.CancelTimeout:
		err = d.cancelTimeout(ctx, u, e.Question)
	case fsm.Answer:
		s.log.Info().Int("question", e.Question).Str("answer", e.Answer).Msg("question answered")
		err = bus.PublishEvent(ctx, d.js, contract.NewAnswer(u, e.ID, e.Question, e.Answer, e.Text), contract.MsgID(u, e.ID, "answer", fmt.Sprint(e.Question)))
	case fsm.SteerRun:
		s.log.Info().Str("steer", id).Int("len", len(e.Text)).Msg("message added to the run")
		err = bus.PublishEvent(ctx, d.js, contract.NewSteer(u, e.ID, e.Text),
			contract.MsgID(u, e.ID, "steer", id))
	case fsm.ReportStatus, fsm.ReportCost, fsm.AddSchedule, fsm.ListSchedules, fsm.RemoveSchedule, fsm.Admin, fsm.ListProjects:
		var text string
		if text, err = d.reply(ctx, u, s.before, id, e); err == nil {
			err = d.notice(ctx, u, id, s.ref(i), text)
		}
	case fsm.NextPage:
		err = bus.PublishEvent(ctx, d.js, contract.NewMore(u, id),
			contract.MsgID(u, id, "more"))
	}
	return false, err
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
	if kw, arg, ok := fsm.ParseKeyword(job.Text); ok && (kw == fsm.Preview || kw == fsm.Previews || kw == fsm.Stop) && job.Action == "" && len(job.Media) == 0 {
		job.Action, job.Text = contract.ActionHome, strings.TrimSpace(kw+" "+arg)
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
	if _, err := bus.Publish(ctx, d.js, contract.JobSubject(u), data, contract.MsgID(u, e.ID, "job")); err != nil {
		return fmt.Errorf("publish job: %w", err)
	}
	log.Info().Str("started", e.ID).Str("started_trace", contract.TraceFrom(ctx)).Str("action", e.Action).
		Bool("from_queue", fromQueue).Msg("job published")
	if fromQueue {
		if err := d.dequeue(ctx, log, head.seq); err != nil {
			return err
		}
	}
	return nil
}

// notice sends the person a short text of textslash's own about message
// id; ref makes it unique, so a redelivered input does not repeat it.
func (d *Dispatcher) notice(ctx context.Context, u contract.User, id, ref, text string) error {
	text = d.named(text)
	return bus.PublishEvent(ctx, d.js, contract.NewNotice(u, id, text),
		contract.MsgID(u, id, "notice", ref))
}

// named is text with the agent named as the person knows it, where an
// agent spoken to over the Agent Client Protocol runs: textslash's texts
// say Claude, whose questions, modes and answers those agents share
// ("Denied. Gemini was told no.").
func (d *Dispatcher) named(text string) string {
	if !contract.IsACPAgent(d.cfg.Agent) {
		return text
	}
	who := contract.AgentWho(d.cfg.Agent)
	text = strings.ReplaceAll(text, "Claude Code", "Claude")
	var b strings.Builder
	for i, part := range strings.Split(text, "Claude") {
		if i > 0 {
			before := strings.TrimRight(b.String(), " ")
			if before == "" || strings.HasSuffix(before, ".") || strings.HasSuffix(before, ":") || strings.HasSuffix(before, "\n") {
				b.WriteString(strings.ToUpper(who[:1]) + who[1:])
			} else {
				b.WriteString(who)
			}
		}
		b.WriteString(part)
	}
	return b.String()
}
