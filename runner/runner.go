// Package runner runs jobs: one agent process per job, in the user's own
// workspace, and turns what the agent does into events. The dispatcher sends
// a user's jobs one at a time; the runner bounds how many users run at once.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/clock"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/rewarm"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/workspace"
)

// New checks the configuration, then readies the machine for the runs and
// picks the agent. A setting refused, or one the machine cannot honour,
// is a *contract.ConfigError naming the setting.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Runner, error) {
	cfg = cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if js == nil {
		return nil, errors.New("runner: no JetStream")
	}
	r := &Runner{cfg: cfg, js: js, media: handover.NewStore(js), log: log.With().Str("svc", "runner").Logger(), running: map[string]*running{}, takenOver: map[string]bool{},
		ready: make(chan struct{})}
	if err := r.setUp(); err != nil {
		return nil, err
	}
	if err := r.pickAgent(); err != nil {
		return nil, err
	}
	r.gateMemory()
	return r, nil
}

// Ready is closed once Run has readied what runs need (its consumer, the
// screenshot endpoint, homes' networks, preview links) and said "runner
// ready": it takes jobs from then on.
func (r *Runner) Ready() <-chan struct{} { return r.ready }

// setUp readies what runs need of the machine: the agent user, the
// sandbox, the workspaces, the people's credentials and the agents'
// textslash command.
func (r *Runner) setUp() error {
	cfg := &r.cfg
	ws, err := filepath.Abs(cfg.Workspaces)
	if err != nil {
		return settingErr("Workspaces", cfg.Workspaces, "not a usable path", err)
	}
	cfg.Workspaces = ws
	if r.user, err = sandbox.LookupUser(cfg.AgentUser); err != nil {
		return settingErr("AgentUser", cfg.AgentUser, "not a user of this system", err)
	}
	off := sandbox.Part{Why: "runs are not sandboxed (TEXTSLASH_SANDBOX=off)"}
	r.conf = sandbox.Confinement{Homes: off, Network: off, Limits: off, Disk: off}
	if cfg.Sandbox != nil {
		if err := r.confine(); err != nil {
			return settingErr("Sandbox", nil, "does not work here", err)
		}
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return settingErr("Workspaces", ws, "cannot be made", err)
	}
	if changed, err := sandbox.Reachable(ws, r.user); err != nil {
		return settingErr("Workspaces", ws, "out of the agent user's reach", err)
	} else if len(changed) > 0 {
		r.log.Info().Strs("dirs", changed).Str("agent_user", r.user.Name).Msg("directories above the workspaces made traversable (o+x, not listable) for the agent user")
	}
	if r.creds, err = sandbox.OpenCredentials(cfg.Credentials, ws, cfg.Sandbox, r.user, r.log); err != nil {
		return settingErr("Credentials", cfg.Credentials, "cannot be used", err)
	}
	if cfg.ShotCommand != "" {
		if r.bin, err = handover.InstallCommand(ws, cfg.ShotCommand); err != nil {
			return settingErr("ShotCommand", cfg.ShotCommand, "cannot be given to the agents", err)
		}
	}
	r.ws = &workspace.Workspaces{
		Root: ws, User: r.user, Sandbox: cfg.Sandbox, Bin: r.bin,
		ProjectMax: cfg.ProjectMaxBytes, SnapshotMax: cfg.SnapshotMax,
	}
	r.openDisks()
	return nil
}

// AgentOf is the agent a runner of cfg on this machine runs: cfg.Agent,
// or when it is empty Claude Code where it is installed and can run (it
// refuses root), else the shell.
func AgentOf(cfg Config) string {
	if cfg.Agent != "" {
		return cfg.Agent
	}
	// An agent user the operator gave: nobody, the sandbox's stand-in as
	// root, does not count.
	if cfg.claudeBin() != "" && (os.Geteuid() != 0 || cfg.AgentUser != "") {
		return AgentClaude
	}
	return AgentShell
}

// claudeBin is the Claude Code binary: ClaudeBin, else claude in PATH;
// empty when there is none.
func (c Config) claudeBin() string {
	if c.ClaudeBin != "" {
		return c.ClaudeBin
	}
	bin, _ := exec.LookPath("claude")
	return bin
}

// pickAgent picks the agent (AgentOf).
func (r *Runner) pickAgent() error {
	claudeBin, chosenUser := r.cfg.claudeBin(), r.cfg.AgentUser != ""
	r.cfg.Agent = AgentOf(r.cfg)
	switch r.cfg.Agent {
	default:
		if a, ok := agent.NamedACP(r.cfg.Agent, r.cfg.AgentBin); ok {
			if err := checkACP(r.cfg.Agent, a); err != nil {
				return err
			}
			r.agent = a
			break
		}
		if err := checkCommand(r.cfg.Agent); err != nil {
			return err
		}
		r.agent = agent.Command{Line: r.cfg.Agent}
	case AgentShell:
		r.agent = agent.Shell{}
	case AgentClaude:
		if claudeBin == "" {
			return contract.BadSetting(service, "Agent", AgentClaude, "no claude binary in PATH, and none given")
		}
		if _, err := exec.LookPath(claudeBin); err != nil {
			return settingErr("ClaudeBin", claudeBin, "not an executable", err)
		}
		if os.Geteuid() == 0 && !chosenUser {
			return contract.BadSetting(service, "AgentUser", "", "required for claude as root (Claude Code will not run as root): an unprivileged OS user for the agents")
		}
		r.agent = &agent.Claude{Bin: claudeBin, AppendSystemPrompt: agent.SystemPrompt}
	}
	r.claudeBin = claudeBin
	return nil
}

// confine readies the runner's sandbox at start: bwrap works, runs have an
// unprivileged identity (nobody, when textslash runs as root without an
// AgentUser), and limits can be set — or says why not.
func (r *Runner) confine() error {
	if os.Geteuid() == 0 && r.user == nil {
		nobody, err := sandbox.LookupUser("nobody")
		if err != nil {
			return fmt.Errorf("%w: as root without an AgentUser runs drop to nobody, which this system lacks: %v", sandbox.ErrNoSandbox, err)
		}
		r.user = nobody
		r.log.Warn().Msg("runs sandboxed as nobody: set TEXTSLASH_AGENT_USER to give agents a user of their own")
	}
	bin := r.cfg.ClaudeBin
	if a, ok := r.agent.(*agent.ACP); ok {
		bin = a.Bin
	}
	unlimited, err := r.cfg.Sandbox.Ready(r.user, r.cfg.Workspaces, bin, r.log)
	if err != nil {
		return err
	}
	r.limited = unlimited == nil
	r.conf.Limits = sandbox.Part{On: r.limited}
	if unlimited != nil {
		r.conf.Limits.Why = unlimited.Error()
	}
	r.keepHomes()
	return nil
}

// settingErr is err, from a check of the machine, as the ConfigError of
// setting (value nil: none to show); an err that is one already, naming
// another setting, stays as it is.
func settingErr(setting string, value any, reason string, err error) error {
	if _, ok := errors.AsType[*contract.ConfigError](err); ok {
		return err
	}
	ce := contract.BadSetting(service, setting, value, reason)
	ce.Err = err
	return ce
}

// AgentName is the agent in use: "shell", "claude" or the command line.
func (r *Runner) AgentName() string { return r.cfg.Agent }

// ClaudeBin is the Claude Code binary found (Config.ClaudeBin, else in
// PATH), whether or not it is the agent; empty when there is none.
func (r *Runner) ClaudeBin() string { return r.claudeBin }

// Run takes jobs until ctx ends. Runs still going then get StopGrace to
// finish; those that do not are stopped and reported as interrupted before
// Run returns.
func (r *Runner) Run(ctx context.Context) error {
	ctx = r.log.WithContext(ctx)
	defer r.closeDisks()
	cons, err := r.open(ctx)
	if err != nil {
		return err
	}
	aff, err := openAffinity(ctx, r.js, r.cfg.ID)
	if err != nil {
		return err
	}
	sub, err := r.js.Conn().Subscribe(contract.AllCancels, r.onCancel)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", contract.AllCancels, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	shots := handover.EndpointConfig{Addr: r.cfg.ShotAddr, Chromium: r.cfg.Chromium, User: r.user, Sandboxed: r.cfg.Sandbox != nil}
	if r.shots, err = handover.Listen(shots, r.media); err != nil {
		return err
	}
	defer r.shots.Close()
	if r.homes != nil {
		r.homes.Forward(r.shots.Addr(), r.log)
	}
	r.conf.Tell(r.log)
	stopPreviews, err := r.startPreviews()
	if err != nil {
		return err
	}
	defer stopPreviews()
	if os.Geteuid() == 0 && r.user == nil {
		r.log.Warn().Str("agent", r.cfg.Agent).Msg("agents run as root: set TEXTSLASH_AGENT_USER to run them as an unprivileged user")
	}
	r.checkAuth(ctx)
	r.log.Info().Str("runner", r.cfg.ID).Str("agent", r.cfg.Agent).Str("workspaces", r.cfg.Workspaces).Int("concurrency", r.cfg.Concurrency).Msg("runner ready")
	close(r.ready)
	runs, stopRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRuns()
	// Alive while it may take jobs; gone (and its users free) once its runs
	// are over.
	beating, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	var beat sync.WaitGroup
	beat.Go(func() { aff.beat(beating) })
	defer func() { stopBeat(); beat.Wait() }()
	var wg sync.WaitGroup
	if r.homes != nil {
		defer r.homes.Close()
	}
	upkeep := clock.NewPulse()
	defer upkeep.Stop()
	if r.homes != nil || r.disks != nil {
		upkeep.On(min(r.cfg.HomeIdle/2, time.Minute), func() {
			if r.homes != nil {
				r.homes.Sweep(r.log)
			}
			r.sweepDisks()
		})
	}
	if r.mem != nil && r.homes != nil {
		upkeep.On(10*time.Second, r.relieve)
	}
	if r.homes != nil { // the homes of the people active lately, made again
		defer rewarm.Start(ctx, aff.workspaces, r.users, r.cfg.ID, r.cfg.HomeIdle, r.warmHome)()
	}
	r.takeJobs(ctx, runs, cons, aff, &wg)
	r.finishRuns(&wg, stopRuns)
	return nil
}

// open finds what the runner works with in JetStream: the runner's
// consumer of JOBS, which it returns, the dispatcher's users, the events,
// the projects and, when on, the snapshots.
func (r *Runner) open(ctx context.Context) (jetstream.Consumer, error) {
	cons, err := r.js.Consumer(ctx, contract.StreamJobs, contract.ConsumerRunner)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", contract.ConsumerRunner, err)
	}
	if r.users, err = r.js.KeyValue(ctx, contract.BucketUsers); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", contract.BucketUsers, err)
	}
	if r.events, err = r.js.Stream(ctx, contract.StreamEvents); err != nil {
		return nil, fmt.Errorf("stream %s: %w", contract.StreamEvents, err)
	}
	if err := r.ws.Open(ctx, r.js, r.cfg.Snapshots); err != nil {
		return nil, err
	}
	return cons, nil
}

// takeJobs fetches jobs from cons and runs those this runner takes
// (affinity), each in runs, at most Concurrency (or DefaultHeld) at once, until ctx ends
// or, with IdleExit, the runner has had no work that long. wg counts the
// runs under way.
func (r *Runner) takeJobs(ctx, runs context.Context, cons jetstream.Consumer, aff *affinity, wg *sync.WaitGroup) {
	held := r.cfg.Concurrency
	if held == 0 {
		held = DefaultHeld // each waits for memory in admit
	}
	slots := make(chan struct{}, held)
	var lastWork atomic.Int64 // when the last job started or ended, unix nanoseconds
	lastWork.Store(time.Now().UnixNano())
	idle := func() time.Duration { return time.Since(time.Unix(0, lastWork.Load())) }
	for {
		if r.cfg.IdleExit > 0 && len(slots) == 0 && idle() >= r.cfg.IdleExit {
			r.log.Info().Dur("idle_ms", r.cfg.IdleExit).Msg("no work for a while; the runner exits (jobs wait in JetStream)")
			return
		}
		// Take a job only when a slot is free, so no job waits
		// unacknowledged in this process while others run.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			return
		}
		// Short pulls: asking anew every few seconds costs one request
		// each. (A job handed back that sat untaken for a minute was the
		// hand-backs' lockstep, not the pull's length: see handBackDelay.)
		wait := 5 * time.Second
		if r.cfg.IdleExit > 0 {
			wait = min(wait, max(r.cfg.IdleExit-idle(), 100*time.Millisecond))
		}
		fetchCtx, cancel := context.WithTimeout(ctx, wait)
		msg, err := cons.Next(jetstream.FetchContext(fetchCtx))
		cancel()
		if err != nil {
			<-slots
			if ctx.Err() == nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
				r.log.Warn().Err(err).Msg("fetch job")
				time.Sleep(time.Second)
			}
			continue
		}
		if !r.takes(ctx, aff, msg) {
			<-slots
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { lastWork.Store(time.Now().UnixNano()); <-slots; wg.Done() }()
			bus.Settle(runs, msg, r.handle, r.log)
		}()
		lastWork.Store(time.Now().UnixNano())
	}
}

// finishRuns gives the runs under way StopGrace to finish before stopping
// them (they are then reported interrupted); it returns once all are over.
func (r *Runner) finishRuns(wg *sync.WaitGroup, stopRuns context.CancelFunc) {
	over := make(chan struct{})
	go func() { wg.Wait(); close(over) }()
	r.mu.Lock()
	n := len(r.running)
	r.mu.Unlock()
	if n > 0 {
		r.log.Info().Int("runs", n).Dur("grace_ms", r.cfg.StopGrace).Msg("stopping: letting the runs under way finish")
	}
	select {
	case <-over:
	case <-time.After(r.cfg.StopGrace):
		if n > 0 {
			r.log.Warn().Dur("grace_ms", r.cfg.StopGrace).Msg("runs still going after the grace period: stopping them")
		}
	}
	stopRuns()
	<-over
}
