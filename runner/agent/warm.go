package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/runner/agent/idle"
	"github.com/textslash/textslash/runner/sandbox"
)

const (
	// interruptWait is how long a cancelled warm run waits for the CLI to
	// end its turn after an interrupt; past it the CLI is ended.
	interruptWait = 5 * time.Second
	// endGrace is how long a warm CLI has to exit once its stdin is
	// closed, before it is killed.
	endGrace = 2 * time.Second
	// budgetSlack is how far the budget a run has left may be from what a
	// warm CLI has left of its --max-budget-usd and still count as equal.
	budgetSlack = 1e-9
)

// Warm is one live Claude Code process kept between runs: a follow-up is
// one more user message on its stream-json stdin, not a new CLI resuming
// the session. The zero value holds no process and is ready to use.
//
// A run given a Warm (Run.Warm) goes to its process when the process is
// alive and fits the run exactly: the command line and environment the
// run would start the CLI with (but for the run mark), and the session the
// run continues. Otherwise the Warm ends that process and starts another
// for the run (with --resume, as a cold run does), which it keeps. Budgets
// stay per run although --max-budget-usd counts per process: a process
// serves a run only while what it has spent plus what the run may spend
// is the cap it was started with.
//
// A Warm serves one run at a time (later runs wait). Nothing ends its
// process but Close, a restart, a cancelled run whose turn the CLI would
// not interrupt, or the process dying, which the next run notices.
type Warm struct {
	busy sync.Mutex // held for a whole run

	mu   sync.Mutex // guards p and a
	p    *claudeProc
	a    *acpProc  // an ACP agent's process, kept the same way (ACP)
	rest idle.Rest // stops the process's group once idle for idlePause
}

// idlePause is how long a warm agent waits for its person's next message
// before its process group is stopped (package idle), continued by the
// next run, a start or Close.
var idlePause = 10 * time.Second

// Wake continues w's process if it was stopped while idle, ahead of a
// run coming for it, and lets it be stopped again idlePause from now if
// no run takes it by then.
func (w *Warm) Wake() {
	w.rest.Wake()
	w.resting()
}

// resting arms the pause of w's process, idlePause from now: a run that
// used it calls it as it ends. A warm CLI's group is the process started
// for it and what runs it (nsenter, the CLI and the tools it started in
// its group); nothing is stopped while a run has it.
func (w *Warm) resting() {
	w.rest.Arm(idlePause, func() ([]int, func()) {
		if !w.busy.TryLock() {
			return nil, nil // a run took it: it rests again when done
		}
		w.mu.Lock()
		var groups []int
		if w.p != nil && w.p.alive() {
			groups = append(groups, w.p.cmd.Process.Pid)
			w.p.log.Debug().Msg("claude: the warm CLI is idle: stopped until its person's next message")
		}
		if w.a != nil && w.a.alive() {
			groups = append(groups, w.a.cmd.Process.Pid)
			w.a.log.Debug().Msg("acp: the warm agent is idle: stopped until its person's next message")
		}
		return groups, func() { w.mu.Unlock(); w.busy.Unlock() }
	})
}

// Close ends the live process, if any: it closes the CLI's stdin, and
// kills its process group and every process carrying its run mark (as
// sandbox.EndGroup does). The Warm stays usable: the next run starts a
// new process.
func (w *Warm) Close() {
	w.mu.Lock()
	p, a := w.p, w.a
	w.p, w.a = nil, nil
	w.mu.Unlock()
	w.rest.Wake() // to end by its stdin
	if p != nil {
		p.end()
	}
	if a != nil {
		a.end()
	}
}

// pid is the live process's id, 0 when there is none.
func (w *Warm) pid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.p == nil || !w.p.alive() {
		return 0
	}
	return w.p.cmd.Process.Pid
}

// Pids are the live CLI's process and those it runs in (nsenter or
// bubblewrap, the first being the one started), for a home to leave
// running between runs; nil when there is no live CLI.
func (w *Warm) Pids() []int {
	w.mu.Lock()
	p, a := w.p, w.a
	w.mu.Unlock()
	if a != nil {
		return a.tree()
	}
	if p == nil || !p.alive() {
		return nil
	}
	return cliChain(p.cmd.Process.Pid, p.bin)
}

// Start starts w's process for r ahead of r's run, continuing
// r.SessionID as the run will: a run that fits it (the same command line,
// directory, environment, budget and session) then goes to it, with no
// CLI to start. A runner makes the warm agents of the people active lately
// again this way after a restart. It returns once the CLI runs (it
// answered the control protocol's initialize), or with an error when it
// exited or ctx ended first (its process ended). w's process, if any, is
// kept when it fits r.
func (w *Warm) Start(ctx context.Context, c *Claude, r *Run) error {
	if r.SessionID == "" {
		return errors.New("claude: no session to continue (a warm CLI serves a run only then)")
	}
	w.busy.Lock()
	defer w.busy.Unlock()
	w.rest.Wake()
	defer w.resting()
	if w.take(ctx, c, r, r.SessionID) != nil {
		return nil
	}
	p, err := startProc(ctx, c, r, r.SessionID)
	if err != nil {
		return fmt.Errorf("claude: %w", err)
	}
	p.session = r.SessionID
	select {
	case <-p.heard:
	case <-p.exited:
		return fmt.Errorf("claude: the CLI exited at its start (code %d): %s", sandbox.ExitCode(p.cmd), p.stderr.Bytes())
	case <-ctx.Done():
		p.end()
		return ctx.Err()
	}
	w.mu.Lock()
	w.p = p
	w.mu.Unlock()
	return nil
}

// drop ends p if it is still w's process.
func (w *Warm) drop(p *claudeProc) {
	w.mu.Lock()
	if w.p == p {
		w.p = nil
	}
	w.mu.Unlock()
	p.end()
}

// run is Claude.run on w: r's message as one turn of the live process, or
// of one started for it (continuing session).
func (w *Warm) run(ctx context.Context, c *Claude, r *Run, session string) (claudeResult, error) {
	w.busy.Lock()
	defer w.busy.Unlock()
	w.rest.Wake()
	defer w.resting()
	p := w.take(ctx, c, r, session)
	reused := p != nil
	st, out, err := w.turn(ctx, c, r, session, p)
	if err != nil {
		return claudeResult{Result: Result{ExitCode: -1}}, err
	}
	if reused && out.died && !out.heard && ctx.Err() == nil {
		// It died between runs and the message was lost with it: start
		// anew, as if it had been noticed before.
		zerolog.Ctx(ctx).Info().Int("pid", out.p.cmd.Process.Pid).Msg("claude: the warm CLI died before the run's message; starting another")
		reused = false
		if st, out, err = w.turn(ctx, c, r, session, nil); err != nil {
			return claudeResult{Result: Result{ExitCode: -1}}, err
		}
	}
	res, err := finish(ctx, r, st, out.exitCode(), out.stderr)
	res.Warm = reused
	res.started = res.started || reused // a session the CLI holds is there
	return res, err
}

// turn runs r's turn on p, or on a process started for it when p is nil,
// and keeps the process or ends it after.
func (w *Warm) turn(ctx context.Context, c *Claude, r *Run, session string, p *claudeProc) (*claudeStream, turnOutcome, error) {
	if p == nil {
		var err error
		if p, err = startProc(ctx, c, r, session); err != nil {
			return nil, turnOutcome{}, fmt.Errorf("claude: %w", err)
		}
		w.mu.Lock()
		w.p = p
		w.mu.Unlock()
	}
	st, out := p.turn(ctx, r)
	if out.died || out.stuck {
		w.drop(p)
		return st, out, nil
	}
	p.keep(st)
	if err := p.endTools(); err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Int("pid", p.cmd.Process.Pid).Msg("claude: ending the warm CLI, whose tools cannot be told from it")
		w.drop(p)
	}
	return st, out, nil
}

// take returns w's process if it is alive and fits r continuing session;
// else it ends it, if any, and returns nil.
func (w *Warm) take(ctx context.Context, c *Claude, r *Run, session string) *claudeProc {
	w.mu.Lock()
	p := w.p
	w.mu.Unlock()
	if p == nil {
		return nil
	}
	why := p.misfit(ctx, c, r, session)
	if why == "" {
		return p
	}
	zerolog.Ctx(ctx).Info().Int("pid", p.cmd.Process.Pid).Str("why", why).Str("session", session).
		Str("warm_session", p.session).Msg("claude: the warm CLI does not fit the run; restarting it")
	w.drop(p)
	return nil
}

// misfit says why p cannot serve r continuing session, "" when it can.
func (p *claudeProc) misfit(ctx context.Context, c *Claude, r *Run, session string) string {
	switch {
	case !p.alive():
		return "it exited"
	case session == "":
		return "a new session"
	case session != p.session:
		return "another session"
	}
	// What the process may still spend is what the run may: its cap less
	// what it spent.
	if b := r.Job.Budget; (b != nil) != p.budget || (b != nil && math.Abs(p.spent+b.LeftUSD-p.capUSD) > budgetSlack) {
		return "the budget"
	}
	// The command line the process was started with, if it were started
	// for r: the session and cap it was started with.
	cmd := r.Command(context.WithoutCancel(ctx), c.bin(), c.args(r, p.resumed, p.capUSD)...)
	switch {
	case cmd.Err != nil:
		return "its command: " + cmd.Err.Error()
	case cmd.Path != p.cmd.Path || !slices.Equal(cmd.Args, p.cmd.Args):
		return "its command line"
	case cmd.Dir != p.cmd.Dir:
		return "its directory"
	case !slices.Equal(sandbox.WithoutMark(cmd.Env), sandbox.WithoutMark(p.cmd.Env)):
		return "its environment"
	}
	return ""
}

// warmBin is the Claude Code binary that bin names, for finding the CLI
// among the processes of a sandboxed run.
func warmBin(bin string) string {
	if path, err := exec.LookPath(bin); err == nil {
		return path
	}
	return bin
}
