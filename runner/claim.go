package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// Claiming a job (admit): one run per user in this process, a cancel
// finding the run it names, and the started mark that keeps a job from
// running twice.

// admit makes the job its user's run in this process and marks it
// started, in ctx (the job's); runCtx is the run's own context, under
// ctx. A job cancelled is dropped (errDropped), one started before is
// refused as interrupted.
func (ru *run) admit(ctx context.Context, msg jetstream.Msg) (runCtx context.Context, err error) {
	r, u, log := ru.r, ru.job.User, zerolog.Ctx(ctx)
	// Tell JetStream the job is in hand, so a long run is not redelivered;
	// a crashed runner stops telling, and the job is redelivered after
	// the consumer's AckWait.
	ru.later(ru.pulse.On(contract.JobAckWait/3, func() { _ = msg.InProgress() }))
	// One run per user in this process, even while a cancelled one is
	// still being stopped.
	runCtx, ru.cancel = context.WithCancelCause(ctx)
	ru.later(func() { ru.cancel(nil) })
	release, err := r.claim(runCtx, u, ru.job.ID, ru.cancel)
	if err != nil {
		return runCtx, err
	}
	ru.later(release)
	// A job the person cancelled (before it was taken, or while it waited
	// for the slot, when a cancel found the previous run there) is among
	// the user's finished jobs: drop it. A job the state does not know yet
	// runs: after a crash the state can lag behind the jobs it published
	// (its write lost, the job's kept), and the dispatcher publishes the
	// job again only as a duplicate, which would never be delivered. From
	// here on, a cancel finds this run in r.running.
	if finished, err := r.finished(ctx, u, ru.job.ID); err != nil {
		return runCtx, err
	} else if finished {
		log.Info().Msg("job already finished or cancelled; not running it")
		return runCtx, errDropped
	}
	if r.mem != nil {
		err := r.mem.Wait(runCtx, func(available int64) {
			log.Info().Int64("available", available).Int64("per_run", r.mem.Cost).Msg("waiting for memory: the machine is full")
			// A progress line: the chat shows it, and status says it as
			// the run's last step.
			ev := contract.NewProgress(u, ru.job.ID, MsgWaitMemory)
			if err := bus.PublishEvent(ctx, r.js, ev, contract.MsgID(u, ru.job.ID, "memory")); err != nil {
				log.Warn().Err(err).Msg("progress event")
			}
		})
		if err != nil {
			if ctx.Err() != nil {
				return runCtx, ctx.Err() // the runner stops: the job is delivered again
			}
			log.Info().Msg("cancelled while waiting for memory")
			return runCtx, errDropped
		}
	}

	// Mark the job started. The mark is deduplicated by the job's id: a
	// duplicate means some runner started it before, and running it again
	// could repeat its effects. That earlier run is over: a run cannot
	// outlive the dedup window (the timeout is shorter), and a runner
	// holding a job keeps it from being redelivered. Either its runner died,
	// or it ended and published its done event — then the done published
	// here is dropped by JetStream as a duplicate of that one. (The
	// delivery count cannot tell these apart: a crashed embedded server may
	// not have stored it.)
	started := contract.NewStarted(u, ru.job.ID, quote(ru.job))
	if dup, err := r.markStarted(ctx, started, msg); err != nil {
		return runCtx, err
	} else if dup {
		log.Warn().Msg("job was started before and interrupted; not running it again")
		return runCtx, &refused{status: contract.StatusInterrupted, text: MsgInterrupted}
	}
	return runCtx, nil
}

// errCancelled is the cause of a run the person cancelled.
var errCancelled = errors.New("cancelled by the person")

// finished reports whether the dispatcher counts job among u's finished
// (ended or cancelled) jobs.
func (r *Runner) finished(ctx context.Context, u contract.User, job string) (bool, error) {
	e, err := r.users.Get(ctx, u.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("user state: %w", err)
	}
	var st contract.UserState
	if err := contract.Decode(e.Value(), &st); err != nil {
		return false, err
	}
	return slices.Contains(st.Finished, job) && st.JobID != job, nil
}

// claim makes job the user's run in this process, waiting for a previous
// run of the same user (one being cancelled) to end first.
func (r *Runner) claim(ctx context.Context, u contract.User, job string, cancel context.CancelCauseFunc) (release func(), err error) {
	me := &running{job: job, trace: contract.TraceFrom(ctx), cancel: cancel, done: make(chan struct{})}
	for {
		release, prev := r.claimNow(u, me)
		if prev == nil {
			return release, nil
		}
		select {
		case <-prev.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// claimNow makes me the user's run in this process, unless the user has
// one now (prev).
func (r *Runner) claimNow(u contract.User, me *running) (release func(), prev *running) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev := r.running[u.Key()]; prev != nil {
		return nil, prev
	}
	r.running[u.Key()] = me
	return func() {
		r.mu.Lock()
		delete(r.running, u.Key())
		r.mu.Unlock()
		close(me.done)
	}, nil
}

// onCancel stops the named job of a user if it runs here.
func (r *Runner) onCancel(m *nats.Msg) {
	u, err := contract.UserFromSubject(m.Subject)
	if err != nil {
		return
	}
	r.mu.Lock()
	run := r.running[u.Key()]
	r.mu.Unlock()
	if run != nil && run.job == string(m.Data) {
		log := bus.TraceLog(r.log, run.trace)
		log.Info().Str("user", u.Key()).Str("job_id", run.job).Msg("cancelling run")
		run.cancel(errCancelled)
	}
}

// markStarted publishes the started event and reports whether the job had
// been started before (a duplicate). JetStream's deduplication tells for
// jobs younger than its window; a run that waited for the person's answers
// can outlive it, so an older job is looked up: the user's last started
// event is this job's if it was started (a user's jobs run one at a time).
func (r *Runner) markStarted(ctx context.Context, ev contract.Event, job jetstream.Msg) (bool, error) {
	if md, err := job.Metadata(); err == nil && time.Since(md.Timestamp) > contract.DedupWindow-time.Minute {
		last, err := r.events.GetLastMsgForSubject(ctx, contract.EventSubject(ev.User, ev.Kind))
		var prev contract.Event
		switch {
		case err == nil && contract.Decode(last.Data, &prev) == nil && prev.JobID == ev.JobID:
			return true, nil
		case err != nil && !errors.Is(err, jetstream.ErrMsgNotFound):
			return false, fmt.Errorf("last started event: %w", err)
		}
	}
	ack, err := bus.PublishEventAck(ctx, r.js, ev, contract.MsgID(ev.User, ev.JobID, string(ev.Kind)))
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}
