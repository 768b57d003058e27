package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner/clock"
)

// run is one job from its start to its done event: what all of handle's
// steps (admit, prepare, execute, report) share. Each step is given what
// the one before it returned, and the contexts it needs: the job's (ctx:
// it ends when the runner stops) and the run's own (runCtx, made by
// admit: it also ends when the person cancels the run, at its time limit
// or at a limit of its cgroup). Both carry the run's log
// (zerolog.Ctx), which names the user and the job, and the home once
// the run is in one.
type run struct {
	r      *Runner
	job    contract.Job
	cancel context.CancelCauseFunc // ends the run's context, with a cause
	pulse  *clock.Pulse            // the run's signs of life, while it lasts
	done   contract.Event          // the report, filled in on the way
	// cleanups are undone when the run is over, last first.
	cleanups []func()
}

// Friendly texts for runs that did not end well: the person reads these,
// never the error behind them, which goes to the log.
const (
	MsgTimeout = "That took too long. Try a simpler request."
	MsgFailed  = "Something went wrong. Try again in a moment."
	// With the reason the agent cannot run, as its program or the shell
	// said it (agent.SetupError), and how to fix it when known.
	MsgSetup       = "The agent cannot run here: %s"
	MsgInterrupted = "textslash restarted while working on this, so it was stopped. Send it again if you still need it."
	MsgNoOutput    = "(no output)"
	MsgCancelled   = "Stopped."
	MsgApprove     = "Reply approve to keep the changes (committed on a branch), or reject to discard them."
	// With the budget's name ("your daily budget of $5.00").
	MsgBudgetUsed    = "Not run: %s is used up. Reply cost to see what was spent."
	MsgBudgetStopped = "This run was stopped: it reached %s. Here is what it had done so far."
	// A run waiting until the machine has memory for it.
	MsgWaitMemory = "This machine's memory is taken by other people's runs right now: yours starts as soon as there is room."
	// With what the person's disk holds and its size ("5.0 GB").
	MsgDiskFull = "Your workspace is full: %s of %s. Delete files to make room."
)

// refused ends a run before its agent runs: handle alone turns it into
// the run's done event, its status and text for the person.
type refused struct{ status, text string }

func (e *refused) Error() string { return "not run (" + e.status + "): " + e.text }

// refuse is a refusal of the run with text, as an error.
func refuse(text string) error { return &refused{status: contract.StatusError, text: text} }

// errDropped: the job is not run and no done event is due (it finished
// before, or was cancelled while it waited).
var errDropped = errors.New("job dropped")

// newRun is job's run on r; its pulse beats until it is closed.
func newRun(r *Runner, job contract.Job) *run {
	ru := &run{r: r, job: job, pulse: clock.NewPulse()}
	ru.later(ru.pulse.Stop)
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

// teller returns tell, which publishes a notice of the run's in ctx (the
// job's); key tells its notices apart.
func (ru *run) teller(ctx context.Context) (tell func(key, text string)) {
	return func(key, text string) {
		u := ru.job.User
		ev := contract.NewNotice(u, ru.job.ID, text)
		if err := bus.PublishEvent(ctx, ru.r.js, ev, contract.MsgID(u, ru.job.ID, key)); err != nil {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("notice")
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
			zerolog.Ctx(ctx).Warn().Err(err).Msg("progress event")
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
