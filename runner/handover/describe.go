package handover

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
)

// Analysis captions: with the runner's Config.DescribeImages, each image
// a run handed over without a caption gets the agent's short description
// of it as its caption, from a second run of the agent in the same sandbox
// and workspace that may change nothing.
const (
	// describeMax is the most images described per run: each is a run of
	// the agent, which costs time and money.
	describeMax = 3
	// describeTimeout bounds one description (the job's own time limit
	// bounds them too).
	describeTimeout = 2 * time.Minute
	// describeCaptionRunes is the most characters of a description kept
	// as a caption.
	describeCaptionRunes = 900
	// describeTaskRunes is the most characters of the person's request the
	// describe prompt quotes.
	describeTaskRunes = 500
)

// Describer is an Agent that can look at an image file in the workspace
// (Claude Code reads PNG and JPEG files with its Read tool). The shell and
// command agents cannot: the runner describes images with agents that
// implement it only.
type Describer interface {
	// Describe answers prompt in a fresh session (never r's) in r's
	// workspace and sandbox, read-only (contract.ModePlan), and returns the
	// answer's text and what the run cost.
	Describe(ctx context.Context, r *agent.Run, prompt string) (agent.Result, error)
}

// describePrompt asks for a caption of the image at path for the person
// who asked task.
func describePrompt(path, task string) string {
	task = contract.CutRunes(strings.Join(strings.Fields(task), " "), describeTaskRunes)
	return fmt.Sprintf("Describe the screenshot at %s in two or three sentences for the person who asked: %s\n"+
		"Focus on UI problems, errors and anything that looks broken. Reply with the description only: it is sent as the image's caption.", path, task)
}

// Descriptions captions one run's images with the agent's descriptions
// (nil: none are described).
type Descriptions struct {
	agent Describer
	run   *agent.Run // the job's run: its workspace, sandbox and request
	log   zerolog.Logger
	left  int // descriptions this run may still ask for
	// budget is what the descriptions may still spend, when the job has
	// a budget.
	budget *contract.Budget
	// spent is what the descriptions cost, added to the run's.
	spent agent.Result
}

// NewDescriptions is the Descriptions of run, which has cost spent so
// far, when images are to be described (on: the runner's
// Config.DescribeImages) and ag can look at them; nil otherwise.
func NewDescriptions(on bool, ag agent.Agent, run *agent.Run, spent float64, log zerolog.Logger) *Descriptions {
	a, ok := ag.(Describer)
	if !on || !ok {
		return nil
	}
	d := &Descriptions{agent: a, run: run, log: log, left: describeMax}
	if b := run.Job.Budget; b != nil {
		d.budget = &contract.Budget{LeftUSD: b.LeftUSD - spent, Of: b.Of}
	}
	return d
}

// Caption is the agent's description of the image at path (relative to
// the workspace), cut to describeCaptionRunes; empty when d is nil, the
// run's descriptions are used up, or the description failed (logged).
// ctx is the job's run's: a cancelled job or a runner shutting down stops
// a description.
func (d *Descriptions) Caption(ctx context.Context, path string) string {
	if d == nil {
		return ""
	}
	log := d.log.With().Str("path", path).Logger()
	if d.left <= 0 {
		log.Info().Int("max", describeMax).Msg("image not described: enough images described in this run")
		return ""
	}
	d.left--
	run, err := d.budgeted()
	if err != nil {
		log.Info().Err(err).Msg("image not described")
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	res, err := d.agent.Describe(ctx, run, describePrompt(path, d.run.Job.Text))
	d.spent.CostUSD += res.CostUSD
	d.spent.InputTokens += res.InputTokens
	d.spent.OutputTokens += res.OutputTokens
	text := strings.TrimSpace(res.Text)
	switch {
	case err != nil:
		log.Warn().Err(err).Msg("image not described: the describe run failed")
		return ""
	case text == "":
		log.Warn().Msg("image not described: the describe run said nothing")
		return ""
	}
	log.Info().Float64("cost_usd", res.CostUSD).Msg("image described")
	return contract.CutRunes(text, describeCaptionRunes)
}

// budgeted is the run to describe in: the job's run, with what its budget
// (if it has one) has left after the job and the descriptions so far.
func (d *Descriptions) budgeted() (*agent.Run, error) {
	if d.budget == nil {
		return d.run, nil
	}
	left := d.budget.LeftUSD - d.spent.CostUSD
	if left <= 0 {
		return nil, errNoBudget
	}
	run := *d.run
	run.Job.Budget = &contract.Budget{LeftUSD: left, Of: d.budget.Of}
	return &run, nil
}

// Spent is what the descriptions cost, to add to the run's; nothing when
// d is nil.
func (d *Descriptions) Spent() agent.Result {
	if d == nil {
		return agent.Result{}
	}
	return d.spent
}
