package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/disk"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/session"
	"github.com/textslash/textslash/runner/workspace"
)

// runSeconds times runs, by how they ended.
var runSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
	Name:    "textslash_run_duration_seconds",
	Help:    "How long agent runs took, by how they ended (ok, error, timeout, canceled, interrupted).",
	Buckets: []float64{0.01, 0.1, 1, 5, 15, 30, 60, 120, 300, 600},
}, []string{"status"})

// report makes the done event of what came of the run (how it ended, its
// images, what the next run needs, an approval request) and publishes it,
// after the snapshot of its workspace: o, of the run p readied. ctx is
// the job's, runCtx the run's.
func (ru *run) report(ctx, runCtx context.Context, p *prepared, o outcome) error {
	r, log, done := ru.r, zerolog.Ctx(ctx), &ru.done
	ru.result(ctx, runCtx, p, o)
	ru.images(ctx, runCtx, p, o)
	kept := ru.aftermath(ctx, p, o)
	ru.approval(ctx, runCtx, p, o, kept)
	if r.cfg.ShowCost && (done.CostUSD > 0 || done.InputTokens > 0) {
		done.Text = joinText(done.Text, costLine(*done, r.cfg.Agent))
	}
	runSeconds.WithLabelValues(done.Status).Observe(float64(done.DurationMS) / 1000)
	log.Info().Str("status", done.Status).Int("exit_code", done.ExitCode).Int64("duration_ms", done.DurationMS).
		Int("reply_len", len(done.Text)).Msg("run ended")
	// Before the reply: a runner killed once the person has it must have
	// left the workspace the reply speaks of for the next runner
	// (TestTwoRunners caught a snapshot taken after the reply lost so).
	r.ws.Snapshot(context.WithoutCancel(ctx), ru.job.User, p.project, p.dir)
	return r.publishDone(context.WithoutCancel(ctx), *done)
}

// result fills in the done event from the agent's result: its figures,
// its text and the status, from how the run ended: runCtx's cause (the
// run's), or ctx's end (the job's: the runner stopped).
func (ru *run) result(ctx, runCtx context.Context, p *prepared, o outcome) {
	log := zerolog.Ctx(ctx)
	done, res := &ru.done, o.res
	done.DurationMS = time.Since(p.start).Milliseconds()
	done.ExitCode, done.CostUSD, done.Truncated = res.ExitCode, res.CostUSD, res.Truncated
	done.InputTokens, done.OutputTokens = res.InputTokens, res.OutputTokens
	done.Text = strings.TrimSpace(res.Text)
	done.Sandbox = ru.r.conf.Person()
	if h := ru.homeNow(p); h != nil {
		// The home stays this long without another run (unless more
		// homes crowd it out): status says so. A keyword about the home
		// counts as a use of it.
		h.Touch()
		done.WarmUntil = time.Now().Add(ru.r.cfg.HomeIdle).UTC()
		defer ru.r.homes.HandedOver(done, ru.job.User.Key(), h, p.start)
	}
	var lim *sandbox.LimitError
	var refused *workspace.Refusal
	var setup *agent.SetupError
	cause := context.Cause(runCtx)
	if !errors.As(cause, &lim) && p.cg != nil {
		lim = p.cg.Exceeded() // reached as the agent ended, before the watch saw it
	}
	switch {
	case lim != nil:
		log.Warn().Str("limit", lim.What).Str("max", lim.Max).Str("used", lim.Used).Msg("run ended by its limit")
		done.Status = contract.StatusError
		done.Text = joinText(lim.Message(), done.Text)
	case errors.Is(cause, errCancelled):
		// The dispatcher said "Cancelled." as the person asked: the reply
		// adds only what the run had printed, if anything.
		done.Status = contract.StatusCanceled
		if done.Text != "" {
			done.Text = joinText(MsgCancelled, done.Text)
		}
	case ctx.Err() != nil:
		done.Status = contract.StatusInterrupted
		done.Text = joinText(MsgInterrupted, done.Text)
	case errors.Is(cause, errRunTimeout):
		done.Status = contract.StatusTimeout
		done.Text = joinText(MsgTimeout, done.Text)
	case errors.As(o.err, &refused):
		log.Info().Str("action", ru.job.Action).Str("reason", refused.Text).Msg("job refused")
		done.Status, done.Text = contract.StatusError, refused.Text
	case errors.Is(o.err, agent.ErrBudget):
		log.Info().Float64("cost_usd", res.CostUSD).Msg("run stopped at its budget")
		done.Status = contract.StatusBudget
		done.Text = joinText(fmt.Sprintf(MsgBudgetStopped, ru.job.Budget.Of), done.Text)
	case errors.As(o.err, &setup):
		// Every message would fail so until the operator fixes it: the
		// person (often the operator) is told what the agent said.
		log.Error().Err(o.err).Msg("agent cannot run here")
		done.Status, done.Text = contract.StatusError, setupText(setup)
	case o.err != nil:
		// What the agent said about its failure is for the log, not the
		// person: it may name internals (API errors, paths).
		log.Error().Err(o.err).Int("partial_len", len(done.Text)).Msg("agent failed")
		done.Status, done.Text = contract.StatusError, MsgFailed
	default:
		done.Status = contract.StatusOK
		if done.Text == "" {
			done.Text = MsgNoOutput
		}
	}
	ru.diskFull(ctx, p.disk)
}

// setupText is the reply to a run the agent could not do as set up.
func setupText(e *agent.SetupError) string {
	text := fmt.Sprintf(MsgSetup, strings.TrimSuffix(e.Reason, "."))
	if e.Fix != "" {
		text += ". To fix it: " + e.Fix + "."
	}
	return text
}

// homeNow is the home the run was in, or, for a keyword about the home
// (ActionHome), the person's home on this runner; nil when neither.
func (ru *run) homeNow(p *prepared) *sandbox.Home {
	switch {
	case p.kept != nil:
		return ru.r.homes.Home(p.kept)
	case ru.job.Action == contract.ActionHome:
		return ru.r.homes.Of(ru.job.User.Key())
	}
	return nil
}

// diskFull tells the person their disk d (nil: none) is full when the
// run left it so: in place of MsgFailed (a write that failed is the
// likeliest cause), else before what the run said.
func (ru *run) diskFull(ctx context.Context, d *disk.Disk) {
	log := zerolog.Ctx(ctx)
	if d == nil {
		return
	}
	used, size, full, err := d.Usage()
	if err == nil && full {
		// Old copies set aside go first: the person cannot see them to
		// delete them.
		if dropped, derr := d.DropStale(); derr != nil {
			log.Warn().Err(derr).Msg("person's disk full: old copies set aside not all removed")
		} else if dropped {
			log.Info().Int64("used", used).Msg("person's disk full: old copies set aside removed")
			used, size, full, err = d.Usage()
		}
	}
	if err != nil {
		log.Warn().Err(err).Msg("person's disk usage")
		return
	}
	if !full {
		return
	}
	log.Warn().Int64("used", used).Int64("size", size).Msg("person's disk full")
	// Full is less than 1% left: said as all of it.
	text := fmt.Sprintf(MsgDiskFull, sandbox.BytesText(size), sandbox.BytesText(size))
	if ru.done.Text == MsgFailed {
		ru.done.Text = text
		return
	}
	ru.done.Text = joinText(text, ru.done.Text)
}

// images adds the run's images to the done event: its screenshots
// however it ended (partial results: only a runner shutting down leaves
// them), then, after a message's run, the images it handed over,
// described only when the run was not cut short. The images are
// collected in ctx (the job's), described in runCtx (the run's).
func (ru *run) images(ctx, runCtx context.Context, p *prepared, o outcome) {
	done := &ru.done
	done.Images = o.shots
	if ctx.Err() != nil || ru.job.Action != "" {
		return
	}
	describe := handover.NewDescriptions(ru.r.cfg.DescribeImages && runCtx.Err() == nil, p.agent, p.spec, o.res.CostUSD, *zerolog.Ctx(ctx))
	caption := func(path string) string { return describe.Caption(runCtx, path) }
	images, notes := ru.r.media.Collect(ctx, ru.job, p.task, p.runDir, o.res.Handovers, len(o.shots), p.start, caption)
	done.Images = append(done.Images, images...)
	done.Text = joinText(done.Text, strings.Join(notes, "\n"))
	spent := describe.Spent()
	done.CostUSD += spent.CostUSD
	done.InputTokens += spent.InputTokens
	done.OutputTokens += spent.OutputTokens
}

// aftermath keeps what the next run needs: the messages added too late
// are told, the agent's session kept, the project's branch noted, and a
// message's worktree without changes removed (kept: it stays), in ctx
// (the job's).
func (ru *run) aftermath(ctx context.Context, p *prepared, o outcome) (kept bool) {
	r, job, log, done := ru.r, ru.job, zerolog.Ctx(ctx), &ru.done
	if job.Action == "" && ctx.Err() == nil {
		done.Text = joinText(done.Text, r.notAdded(ctx, job, p.conv))
	}
	if o.res.SessionID != "" && job.Action == "" {
		file := session.FileOf(p.project)
		if err := session.Write(p.home, file, o.res.SessionID); err != nil {
			log.Warn().Err(err).Msg("session not saved; the next message starts a new one")
		}
		if t := o.res.SessionTotal; t != nil {
			if err := session.WriteTotal(p.home, file, o.res.SessionID, *t); err != nil {
				log.Warn().Err(err).Msg("session's running total not saved; the next run may not count its first result")
			}
		}
	}
	if job.Action != contract.ActionClone && ctx.Err() == nil {
		// The clone records its own branch; approve changes it.
		r.ws.NoteBranch(ctx, job.User, p.project, p.dir)
	}
	done.Text = joinText(done.Text, p.wtNote)
	if p.wt != nil && job.Action == "" && ctx.Err() == nil {
		// A run asking for approval itself (::approval::) keeps its
		// branch even without changes: the answer is about it, never
		// about the checkout.
		p.settled = true
		kept = (o.res.Approval && done.Status == contract.StatusOK) || p.wt.Settle(ctx)
	}
	return kept
}

// approval asks the person to approve or reject the changes a message's
// run left (in the checkout, or on the worktree's branch when kept), with
// the diff drawn as an image when it can be; it notes what the request is
// about, and the person's request, for the answer. An answer that went
// through forgets the request. The changes are looked for in runCtx (the
// run's), the diff drawn in ctx (the job's).
func (ru *run) approval(ctx, runCtx context.Context, p *prepared, o outcome, kept bool) {
	job, log, done := ru.job, zerolog.Ctx(ctx), &ru.done
	if done.Status != contract.StatusOK {
		return
	}
	if job.Action == contract.ActionApprove || job.Action == contract.ActionReject {
		if err := workspace.NoteRequest(p.home, p.project, ""); err != nil {
			log.Warn().Err(err).Msg("the answered request's note not removed")
		}
	}
	if job.Action != "" {
		return
	}
	ch, err := workspace.Pending(runCtx, p.spec)
	if err != nil {
		log.Warn().Err(err).Msg("could not look for changes to approve")
	}
	if ch.Summary == "" && !o.res.Approval && !kept {
		return
	}
	done.Approval, done.Choices = true, contract.ApprovalChoices
	text := ch.Text()
	if ch.Diff != "" && ru.r.shots != nil {
		// The diff as a picture a phone shows well; the text keeps the
		// summary.
		if img, err := ru.r.shots.DiffImage(ctx, job, ch.Diff); err != nil {
			log.Warn().Err(err).Msg("diff not drawn; quoted as text")
		} else {
			done.Images = append(done.Images, img)
			text = ch.Summary + "\n"
		}
	}
	approve, about := MsgApprove, (*workspace.Worktree)(nil)
	if kept {
		approve, about = p.wt.ApproveText(), p.wt
	}
	done.Text = joinText(done.Text, text+approve)
	// approve and reject act on what this request is about.
	if err := about.Remember(p.home, p.project); err != nil {
		log.Warn().Err(err).Msg("what the approval request is about not noted")
	}
	if err := workspace.NoteRequest(p.home, p.project, job.Text); err != nil {
		log.Warn().Err(err).Msg("the approval request's request not noted")
	}
}
