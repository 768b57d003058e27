package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/disk"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/sandbox/netns"
	"github.com/textslash/textslash/runner/workspace"
)

// run is one job from its start to its done event: what handle's steps
// (admit, prepare, execute, report) share. The steps are passed the
// contexts they need: the job's (ctx: it ends when the runner stops) and
// the run's own (runCtx, made by admit: it also ends when the person
// cancels the run, at its time limit or at a limit of its cgroup).
type run struct {
	r      *Runner
	cancel context.CancelCauseFunc // ends the run's context, with a cause
	job    contract.Job
	log    zerolog.Logger
	done   contract.Event // the report, filled in on the way
	pulse  *pulse         // the run's signs of life, while it lasts
	// cleanups are undone when the run is over, last first.
	cleanups []func()

	// Where and how the run works (prepare).
	project string
	dir     string // the project's checkout
	home    string // the agent's home: the person's, whatever the project
	runDir  string // where the agent works: dir, or the worktree's
	creds   *sandbox.RunCredentials
	wt      *workspace.Worktree // the job's worktree, or nil
	wtNote  string              // why a message has no worktree
	settled bool                // the worktree was looked at after the run (report)
	voices  []attachment
	limit   *deadline
	start   time.Time
	prog    *progress
	shotTok string          // the run's token at the screenshot endpoint
	task    string          // the run's task id (handover.TaskID, or its home's)
	kept    *homeState      // what the runner keeps with the run's home, or nil
	net     *netns.Net      // the home's network, nil: the host's
	ended   func()          // ends what the run left in its home, once the agent returned
	cg      *sandbox.Cgroup // the run's cgroup, or nil
	disk    *disk.Disk      // the person's disk, or nil: not bounded
	spec    *agent.Run      // what the agent is given
	agent   agent.Agent
	name    string // the agent, for the log
	conv    *conversation

	// What came of it (execute).
	res   agent.Result
	err   error
	shots []contract.Image // taken at the screenshot endpoint
}

// handle runs one job and publishes its events: admit, prepare, execute,
// report. The done event is published before the job is acknowledged,
// so a crash in between repeats only the report, never the run.
func (r *Runner) handle(ctx context.Context, msg jetstream.Msg) error {
	var job contract.Job
	if err := contract.Decode(msg.Data(), &job); err != nil {
		return err
	}
	if err := job.User.Validate(); err != nil {
		return err
	}
	ru := newRun(r, job, zerolog.Ctx(ctx).With().Str("user", job.User.Key()).Str("job_id", job.ID).Logger())
	ru.done = contract.NewDone(job.User, job.ID)
	defer ru.close()
	runCtx, err := ru.admit(ctx, msg)
	if err == nil {
		err = ru.prepare(ctx, runCtx)
	}
	var no *refused
	switch {
	case errors.Is(err, errDropped):
		return nil
	case errors.As(err, &no):
		ru.done.Status, ru.done.Text = no.status, no.text
		return r.publishDone(ctx, ru.done)
	case err != nil:
		return err
	}
	ru.execute(runCtx)
	return ru.report(ctx, runCtx)
}

// refused ends a run before its agent runs: handle alone turns it into
// the run's done event, its status and text for the person.
type refused struct{ status, text string }

func (e *refused) Error() string { return "not run (" + e.status + "): " + e.text }

// refuse is a refusal of the run with text, as an error.
func refuse(text string) error { return &refused{status: contract.StatusError, text: text} }

// errDropped: the job is not run and no done event is due (it finished
// before, or was cancelled while it waited).
var errDropped = errors.New("job dropped")

// newRun is job's run on r, logged with log; its pulse beats until it
// is closed.
func newRun(r *Runner, job contract.Job, log zerolog.Logger) *run {
	ru := &run{r: r, job: job, log: log, pulse: newPulse()}
	ru.later(ru.pulse.stop)
	return ru
}

// later undoes f when the run is over.
func (ru *run) later(f func()) { ru.cleanups = append(ru.cleanups, f) }

// close undoes what the run set up, last first.
func (ru *run) close() {
	for i := len(ru.cleanups) - 1; i >= 0; i-- {
		ru.cleanups[i]()
	}
}

// admit makes the job its user's run in this process and marks it
// started, in ctx (the job's); runCtx is the run's own context, under
// ctx. A job cancelled is dropped (errDropped), one started before is
// refused as interrupted.
func (ru *run) admit(ctx context.Context, msg jetstream.Msg) (runCtx context.Context, err error) {
	r, u, log := ru.r, ru.job.User, ru.log
	// Tell JetStream the job is in hand, so a long run is not redelivered;
	// a crashed runner stops telling, and the job is redelivered after
	// the consumer's AckWait.
	ru.later(ru.pulse.on(contract.JobAckWait/3, func() { _ = msg.InProgress() }))
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

// execute runs the agent in runCtx (the run's), unless the run ended
// while it was prepared, and takes back the screenshots it took at the
// endpoint.
func (ru *run) execute(runCtx context.Context) {
	if runCtx.Err() == nil {
		ru.log.Info().Str("agent", ru.name).Str("mode", ru.job.Mode).Msg("run started")
		ru.res, ru.err = ru.agent.Run(runCtx, ru.spec)
	}
	if ru.ended != nil {
		ru.ended()
	}
	if ru.r.shots != nil {
		ru.shots = ru.r.shots.End(ru.shotTok)
	}
}

// teller returns tell, which publishes a notice of the run's in ctx (the
// job's); key tells its notices apart.
func (ru *run) teller(ctx context.Context) (tell func(key, text string)) {
	return func(key, text string) {
		u := ru.job.User
		ev := contract.NewNotice(u, ru.job.ID, text)
		if err := bus.PublishEvent(ctx, ru.r.js, ev, contract.MsgID(u, ru.job.ID, key)); err != nil {
			ru.log.Warn().Err(err).Msg("notice")
		}
	}
}

// progressPublisher returns publish, which publishes the run's nth
// progress event in ctx (the job's).
func (ru *run) progressPublisher(ctx context.Context) (publish func(n int, line string)) {
	return func(n int, line string) {
		u := ru.job.User
		ev := contract.NewProgress(u, ru.job.ID, line)
		if err := bus.PublishEvent(ctx, ru.r.js, ev, contract.MsgID(u, ru.job.ID, "progress", fmt.Sprint(n))); err != nil {
			ru.log.Warn().Err(err).Msg("progress event")
		}
	}
}

// quote is how status shows a job: the start of its message on one line,
// at most 61 characters (60 and … when cut).
func quote(job contract.Job) string {
	if job.Action != "" {
		return job.Action
	}
	return "“" + contract.CutRunes(strings.Join(strings.Fields(job.Text), " "), 61) + "”"
}

// publishDone publishes a run's end, retrying briefly: it is what moves
// the user on.
func (r *Runner) publishDone(ctx context.Context, done contract.Event) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return bus.PublishEvent(ctx, r.js, done, contract.MsgID(done.User, done.JobID, "done"))
}

// joinText joins two parts of a reply with a blank line; either may be
// empty.
func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}
