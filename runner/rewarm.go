package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/rewarm"
	"github.com/textslash/textslash/runner/session"
)

// warmHome makes p's home as their next message's run would (in the
// same workspace, sandbox and environment) and, for Claude Code, the CLI
// there continuing their session. It holds p's claim meanwhile, never
// waiting for it: a message of theirs waits and then finds both.
func (r *Runner) warmHome(ctx context.Context, p rewarm.Person) (home string, warm bool, err error) {
	job := contract.Job{ID: "rewarm", User: p.User, Mode: cmp.Or(p.State.Mode, r.cfg.DefaultMode, contract.ModeAsk), Project: p.State.Project, NewSession: p.State.NewSession}
	ctx = r.log.With().Str("user", p.User.Key()).Str("job_id", job.ID).Logger().WithContext(ctx)
	ru := newRun(r, job)
	defer ru.close()
	runCtx, cancel := context.WithCancelCause(ctx)
	ru.cancel = cancel
	ru.later(func() { cancel(nil) })
	if p.State.Running() || p.State.Branches {
		return "", false, rewarm.ErrSkip // a run of theirs makes what it needs
	}
	release, prev := r.claimNow(p.User, &running{job: job.ID, cancel: cancel, done: make(chan struct{})})
	if prev != nil {
		return "", false, rewarm.ErrSkip // a message of theirs came first
	}
	ru.later(release)
	if r.homes.Has(p.User.Key()) {
		return "", false, rewarm.ErrSkip
	}
	// Room without letting any home go: within HomesMax, the open-file
	// limit's bound and memory.
	max := r.homes.FileBound()
	if r.cfg.HomesMax > 0 {
		max = min(max, r.cfg.HomesMax)
	}
	if r.homes.Count() >= max || (r.mem != nil && !r.mem.TryTake()) {
		return "", false, rewarm.ErrNoRoom
	}
	d, err := ru.mountDisk(ctx)
	if err != nil || (d != nil && d.Fresh()) || !r.ws.Here(p.User, job.Project) {
		return "", false, rewarm.ErrSkip // their message finds or restores it
	}
	pl, err := ru.workspace(ctx, d, func(string, string) {})
	if err != nil {
		return "", false, rewarm.ErrSkip
	}
	e, err := ru.enclose(ctx, pl)
	switch {
	case err != nil:
		return "", false, fmt.Errorf("no home: %w", err)
	case e.ended == nil:
		return "", false, errors.New("no home: the run was not put in one")
	}
	runCtx = e.logged(runCtx)
	ru.later(func() { r.shots.End(e.shotTok) })
	ru.later(e.ended) // the warm agent stays, as after a run
	r.mu.Lock()
	home = r.homes.Home(e.kept).ID()
	r.mu.Unlock()
	c, claude := r.agent.(*agent.Claude)
	spec := &agent.Run{Job: job, Dir: pl.runDir, Command: e.command, OutputCap: r.cfg.OutputCap, SessionID: session.Read(pl.home, session.FileOf(pl.project))}
	if !claude || job.NewSession || spec.SessionID == "" {
		return home, false, nil
	}
	if total, ok := session.ReadTotal(pl.home, session.FileOf(pl.project), spec.SessionID); ok {
		spec.SessionTotal = &total
	}
	if err := e.kept.Warm.Start(runCtx, c, spec); err != nil {
		zerolog.Ctx(runCtx).Warn().Err(err).Msg("warm agent not started again after the restart; the next message starts it")
		return home, false, nil
	}
	return home, true, nil
}
