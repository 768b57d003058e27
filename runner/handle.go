package runner

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
)

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
	ctx = zerolog.Ctx(ctx).With().Str("user", job.User.Key()).Str("job_id", job.ID).Logger().WithContext(ctx)
	r.homes.Wake(job.User.Key())
	ru := newRun(r, job)
	ru.done = contract.NewDone(job.User, job.ID)
	defer ru.close()
	runCtx, err := ru.admit(ctx, msg)
	var p *prepared
	if err == nil {
		p, err = ru.prepare(ctx, runCtx)
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
	ctx, runCtx = p.logged(ctx), p.logged(runCtx)
	return ru.report(ctx, runCtx, p, ru.execute(runCtx, p))
}

// outcome is what came of a run's agent (execute).
type outcome struct {
	res   agent.Result
	err   error
	shots []contract.Image // taken at the screenshot endpoint
}

// execute runs the agent in runCtx (the run's) as p readied it, unless
// the run ended while it was prepared, and takes back the screenshots it
// took at the endpoint.
func (ru *run) execute(runCtx context.Context, p *prepared) (o outcome) {
	if runCtx.Err() == nil {
		zerolog.Ctx(runCtx).Info().Str("agent", p.name).Str("mode", ru.job.Mode).Msg("run started")
		o.res, o.err = p.agent.Run(runCtx, p.spec)
	}
	if p.ended != nil {
		p.ended()
	}
	if ru.r.shots != nil {
		o.shots = ru.r.shots.End(p.shotTok)
	}
	return o
}
