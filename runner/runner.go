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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// Agent names for Config.Agent.
const (
	AgentShell  = "shell"
	AgentClaude = "claude"
)

// Friendly texts for runs that did not end well (seed 003's table).
const (
	MsgTimeout     = "That took too long. Try a simpler request."
	MsgFailed      = "Something went wrong. Try again in a moment."
	MsgInterrupted = "textslash restarted while working on this, so it was stopped. Send it again if you still need it."
	MsgNoOutput    = "(no output)"
	MsgCancelled   = "Stopped."
	MsgApprove     = "Reply approve to keep the changes (committed on a branch), or reject to discard them."
	// With the budget's name ("your daily budget of $5.00").
	MsgBudgetUsed    = "Not run: %s is used up. Reply cost to see what was spent."
	MsgBudgetStopped = "This run was stopped: it reached %s. Here is what it had done so far."
)

// Config of the runner.
type Config struct {
	// Agent is "shell", "claude", or any other command line, run as the
	// agent with bash -c (see Command); empty picks claude when its binary
	// is found, else shell.
	Agent string
	// ClaudeBin is the Claude Code binary; empty looks up "claude" in PATH.
	ClaudeBin string
	// Workspaces holds one directory per user (and agents' homes in .home).
	Workspaces string
	// AgentUser is the OS user agents run as; needed when running as root
	// for Claude Code, which refuses root.
	AgentUser string
	// Concurrency is how many users' jobs run at once.
	Concurrency int
	// Timeout ends a run that takes longer. Time spent waiting for the
	// person's answer to a question does not count.
	Timeout time.Duration
	// PermissionTimeout is how long a question waits for the person (the
	// dispatcher denies it then); the runner gives up a minute later on
	// its own, should the dispatcher be gone. Default 10 minutes.
	PermissionTimeout time.Duration
	// OutputCap is the most output kept of one run.
	OutputCap int
	// Heartbeat: a run with no progress for this long reports that it is
	// still going ("Still working (4m12s): Running `npm test`"). Default 60s.
	Heartbeat time.Duration
	// IdleExit ends Run after this long without a job (seed 003's idle
	// shutdown of a standalone runner; JetStream keeps what arrives
	// meanwhile for the next start). Zero never ends it (the all-in-one).
	IdleExit time.Duration
	// Chromium is the browser for screenshots; empty looks for Debian's
	// headless shell, then chromium, chromium-browser or google-chrome in
	// PATH when the first shot is asked for.
	Chromium string
	// ShotAddr is where the screenshot endpoint listens; default
	// 127.0.0.1:0 (a free port on loopback, given to each run in its
	// environment). Agents run on the runner's host.
	ShotAddr string
	// ShotCommand is the textslash binary: copied to <Workspaces>/.bin and
	// put first in the agents' PATH, so they can run `textslash shot`.
	// Empty: agents use the endpoint with curl.
	ShotCommand string
	// StopGrace is how long runs under way may go on once Run is asked to
	// stop (no new job is taken meanwhile); then they are stopped and
	// reported interrupted. Zero stops them at once.
	StopGrace time.Duration
	// Sandbox, when set, confines each run (see Sandbox); nil runs agents
	// unconfined, as the agent user only.
	Sandbox *Sandbox
	// ShowCost appends a run's cost and tokens to its reply.
	ShowCost bool
	// Transcriber turns voice notes into the message's text; nil tells
	// the person voice notes cannot be taken here.
	Transcriber Transcriber
	// VoiceMax is the longest voice note taken (default 5 minutes).
	VoiceMax time.Duration
	// VoiceGrace is how long the agent waits after the person is told what
	// was heard, so that a misheard instruction can be cancelled before it
	// runs (zero: no wait; textslash's default is 5 s).
	VoiceGrace time.Duration
	// DescribeImages: each image a run hands over without a caption (at
	// most 3 per run) gets the agent's short description of it as its
	// caption, from a second, read-only run in the same workspace. Only
	// agents that can look at images (a Describer: Claude Code) do.
	DescribeImages bool
	// ProjectMaxBytes is the most a cloned project may take on disk (its
	// files and git objects, measured once cloned); a larger clone is
	// removed. Default DefaultProjectMaxBytes (2 GiB).
	ProjectMaxBytes int64
	// Snapshots: after each run the project's workspace is stored in the
	// snapshot store, and a runner lacking a person's workspace rebuilds it
	// from there (follow.go). SnapshotMax caps one snapshot, counted before
	// compression (default DefaultSnapshotMax); what does not fit is left
	// out, and the person told when it is restored.
	Snapshots   bool
	SnapshotMax int64
	// Credentials is the directory of people's git credentials
	// (TEXTSLASH_CREDENTIALS; see credentials.go): one subdirectory per
	// person, named by contract.PersonKey; each run of theirs gets a
	// read-only copy at CredentialsPath. Handed out only in the sandbox.
	Credentials string
	// ID names this runner among those sharing the jobs: each user's jobs
	// run on the runner holding their workspace (see affinity). It must
	// stay the same across restarts with the same Workspaces. Default:
	// DefaultID, the host name.
	ID string
}

func (c *Config) defaults() {
	if c.VoiceMax <= 0 {
		c.VoiceMax = 5 * time.Minute
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.Timeout <= 0 {
		c.Timeout = 300 * time.Second
	}
	if c.PermissionTimeout <= 0 {
		c.PermissionTimeout = contract.PermissionTimeout
	}
	// A run's own work must end within the dedup window, for the started
	// mark to tell a job that ran from one that did not; a run that also
	// waited for the person is told apart by markStarted's look-up.
	c.Timeout = min(c.Timeout, contract.DedupWindow-time.Minute)
	if c.OutputCap <= 0 {
		c.OutputCap = 10 << 20
	}
	if c.Workspaces == "" {
		c.Workspaces = "workspaces"
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = time.Minute
	}
	if c.ShotAddr == "" {
		c.ShotAddr = "127.0.0.1:0"
	}
	if c.ID == "" {
		c.ID = DefaultID()
	}
	if c.ProjectMaxBytes <= 0 {
		c.ProjectMaxBytes = DefaultProjectMaxBytes
	}
	if c.SnapshotMax <= 0 {
		c.SnapshotMax = DefaultSnapshotMax
	}
}

// Runner takes jobs from JOBS and runs them.
type Runner struct {
	cfg    Config
	js     jetstream.JetStream
	log    zerolog.Logger
	agent  Agent
	user   *agentUser
	users  jetstream.KeyValue // the dispatcher's state, read to skip cancelled jobs
	events jetstream.Stream
	shots  *shotServer // the screenshot endpoint, while Run runs
	bin    string      // the directory of the agents' textslash command, or ""
	// limited: runs get a cgroup with the sandbox's limits.
	limited bool
	// projects is each person's registry of projects; branches the
	// branch this runner last knew of each project (see noteBranch).
	projects jetstream.KeyValue
	branches branchMemory
	// snapshots is the snapshot store, nil when snapshots are off.
	snapshots jetstream.ObjectStore
	creds     *credentials // people's git credentials; nil: none handed out

	mu      sync.Mutex
	running map[string]*running // by user key
	// takenOver are the users this runner took over from a runner gone,
	// whose next job has not started yet.
	takenOver map[string]bool
}

// running is a job this runner is running now.
type running struct {
	job    string
	trace  string
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// errCancelled is the cause of a run the person cancelled.
var errCancelled = errors.New("cancelled by the person")

// New checks the configuration and picks the agent.
func New(cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Runner, error) {
	cfg.defaults()
	if js == nil {
		return nil, errors.New("runner: no JetStream")
	}
	ws, err := filepath.Abs(cfg.Workspaces)
	if err != nil {
		return nil, fmt.Errorf("TEXTSLASH_WORKSPACES: %w", err)
	}
	cfg.Workspaces = ws
	r := &Runner{cfg: cfg, js: js, log: log.With().Str("svc", "runner").Logger(), running: map[string]*running{}, takenOver: map[string]bool{}}
	if r.user, err = lookupAgentUser(cfg.AgentUser); err != nil {
		return nil, fmt.Errorf("TEXTSLASH_AGENT_USER: %w", err)
	}
	chosenUser := r.user != nil
	if cfg.Sandbox != nil {
		if err := r.confine(); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(ws, 0o755); err != nil {
		return nil, fmt.Errorf("TEXTSLASH_WORKSPACES: %w", err)
	}
	if changed, err := reachable(ws, r.user); err != nil {
		return nil, fmt.Errorf("TEXTSLASH_WORKSPACES: %w", err)
	} else if len(changed) > 0 {
		r.log.Info().Strs("dirs", changed).Str("agent_user", r.user.name).Msg("directories above the workspaces made traversable (o+x, not listable) for the agent user")
	}
	if r.creds, err = openCredentials(cfg.Credentials, ws, cfg.Sandbox, r.user, r.log); err != nil {
		return nil, fmt.Errorf("TEXTSLASH_CREDENTIALS: %w", err)
	}
	if cfg.ShotCommand != "" {
		if r.bin, err = installShotCommand(ws, cfg.ShotCommand); err != nil {
			return nil, fmt.Errorf("textslash command for agents: %w", err)
		}
	}
	claudeBin := cfg.ClaudeBin
	if claudeBin == "" {
		claudeBin, _ = exec.LookPath("claude")
	}
	switch cfg.Agent {
	case "":
		// Claude Code when it is installed and can run (it refuses root).
		r.cfg.Agent = AgentShell
		if claudeBin != "" && (os.Geteuid() != 0 || chosenUser) {
			r.cfg.Agent = AgentClaude
		}
	}
	switch r.cfg.Agent {
	default:
		r.agent = Command{Line: r.cfg.Agent}
	case AgentShell:
		r.agent = Shell{}
	case AgentClaude:
		if claudeBin == "" {
			return nil, errors.New("TEXTSLASH_AGENT=claude: no claude binary in PATH; set TEXTSLASH_CLAUDE_BIN")
		}
		if os.Geteuid() == 0 && !chosenUser {
			return nil, errors.New("TEXTSLASH_AGENT=claude as root: Claude Code refuses to run as root; set TEXTSLASH_AGENT_USER to an unprivileged user")
		}
		r.agent = &Claude{Bin: claudeBin, AppendSystemPrompt: SystemPrompt}
	}
	return r, nil
}

// AgentName is the agent in use: "shell", "claude" or the command line.
func (r *Runner) AgentName() string { return r.cfg.Agent }

// Run takes jobs until ctx ends. Runs still going then get StopGrace to
// finish; those that do not are stopped and reported as interrupted before
// Run returns.
func (r *Runner) Run(ctx context.Context) error {
	cons, err := r.js.Consumer(ctx, contract.StreamJobs, contract.ConsumerRunner)
	if err != nil {
		return fmt.Errorf("consumer %s: %w", contract.ConsumerRunner, err)
	}
	if r.users, err = r.js.KeyValue(ctx, contract.BucketUsers); err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketUsers, err)
	}
	if r.events, err = r.js.Stream(ctx, contract.StreamEvents); err != nil {
		return fmt.Errorf("stream %s: %w", contract.StreamEvents, err)
	}
	if r.projects, err = r.js.KeyValue(ctx, contract.BucketProjects); err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketProjects, err)
	}
	if err := r.openSnapshots(ctx); err != nil {
		return err
	}
	aff, err := openAffinity(ctx, r.js, r.cfg.ID, r.log)
	if err != nil {
		return err
	}
	sub, err := r.js.Conn().Subscribe(contract.AllCancels, r.onCancel)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", contract.AllCancels, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if r.shots, err = r.startShots(r.cfg.ShotAddr); err != nil {
		return err
	}
	defer r.shots.stop()
	if os.Geteuid() == 0 && r.user == nil {
		r.log.Warn().Str("agent", r.cfg.Agent).Msg("agents run as root: set TEXTSLASH_AGENT_USER to run them as an unprivileged user")
	}
	r.log.Info().Str("runner", r.cfg.ID).Str("agent", r.cfg.Agent).Str("workspaces", r.cfg.Workspaces).Int("concurrency", r.cfg.Concurrency).Msg("runner ready")
	runs, stopRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRuns()
	// Alive while it may take jobs; gone (and its users free) once its runs
	// are over.
	beating, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	var beat sync.WaitGroup
	beat.Go(func() { aff.beat(beating) })
	defer func() { stopBeat(); beat.Wait() }()
	var wg sync.WaitGroup
	slots := make(chan struct{}, r.cfg.Concurrency)
	var lastWork atomic.Int64 // when the last job started or ended, unix nanoseconds
	lastWork.Store(time.Now().UnixNano())
	idle := func() time.Duration { return time.Since(time.Unix(0, lastWork.Load())) }
	for {
		if r.cfg.IdleExit > 0 && len(slots) == 0 && idle() >= r.cfg.IdleExit {
			r.log.Info().Dur("idle", r.cfg.IdleExit).Msg("no work for a while; the runner exits (jobs wait in JetStream)")
			break
		}
		// Take a job only when a slot is free, so no job waits
		// unacknowledged in this process while others run.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		// Short pulls: a job handed back with a delay (affinity's nak) once
		// sat untaken for a minute behind a long pull of the other runner
		// (TestTwoRunners, not understood); asking anew every few seconds
		// costs one request each.
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
			contract.Settle(runs, msg, r.handle, r.log)
		}()
		lastWork.Store(time.Now().UnixNano())
	}
	r.finishRuns(&wg, stopRuns)
	return nil
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
		r.log.Info().Int("runs", n).Dur("grace", r.cfg.StopGrace).Msg("stopping: letting the runs under way finish")
	}
	select {
	case <-over:
	case <-time.After(r.cfg.StopGrace):
		if n > 0 {
			r.log.Warn().Dur("grace", r.cfg.StopGrace).Msg("runs still going after the grace period: stopping them")
		}
	}
	stopRuns()
	<-over
}

// handle runs one job and publishes its events; the done event is published
// before the job is acknowledged, so a crash in between repeats only the
// report, never the run.
func (r *Runner) handle(ctx context.Context, msg jetstream.Msg) error {
	var job contract.Job
	if err := contract.Decode(msg.Data(), &job); err != nil {
		return err
	}
	if err := job.User.Validate(); err != nil {
		return err
	}
	u := job.User
	log := zerolog.Ctx(ctx).With().Str("user", u.Key()).Str("job_id", job.ID).Logger()
	done := contract.Event{Kind: contract.KindDone, User: u, JobID: job.ID}

	// Tell JetStream the job is in hand, so a long run is not redelivered;
	// a crashed runner stops telling, and the job is redelivered after
	// the consumer's AckWait.
	stopBeat := every(contract.JobAckWait/3, func() { _ = msg.InProgress() })
	defer stopBeat()
	// One run per user in this process, even while a cancelled one is
	// still being stopped.
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	release, err := r.claim(runCtx, u, job.ID, cancelRun)
	if err != nil {
		return err
	}
	defer release()
	// A job the person cancelled (before it was taken, or while it waited
	// for the slot, when a cancel found the previous run there) is among
	// the user's finished jobs: drop it. A job the state does not know yet
	// runs: after a crash the state can lag behind the jobs it published
	// (its write lost, the job's kept), and the dispatcher publishes the
	// job again only as a duplicate, which would never be delivered. From
	// here on, a cancel finds this run in r.running.
	if finished, err := r.finished(ctx, u, job.ID); err != nil {
		return err
	} else if finished {
		log.Info().Msg("job already finished or cancelled; not running it")
		return nil
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
	started := contract.Event{Kind: contract.KindStarted, User: u, JobID: job.ID, Text: quote(job)}
	if dup, err := r.markStarted(ctx, started, msg); err != nil {
		return err
	} else if dup {
		log.Warn().Msg("job was started before and interrupted; not running it again")
		done.Status, done.Text = contract.StatusInterrupted, MsgInterrupted
		return r.publishDone(ctx, done)
	}

	// The job's project's workspace; the agent's home is the person's,
	// whatever the project. Copies this runner kept from an earlier time
	// it held the person go first: their snapshots are newer.
	if r.tookOver(u) {
		r.setAside(ctx, log, u)
	}
	project, dir, refusal := r.jobWorkspace(ctx, log, job)
	if refusal != "" {
		done.Status, done.Text = contract.StatusError, refusal
		return r.publishDone(ctx, done)
	}
	home := filepath.Join(r.cfg.Workspaces, ".home", u.Key())
	made := dir
	if job.Action == contract.ActionClone {
		made = home // the clone makes the project's workspace, once checked
	}
	if err := prepareWorkspace(made, home, r.user); err != nil {
		log.Error().Err(err).Msg("workspace")
		done.Status, done.Text = contract.StatusError, MsgFailed
		return r.publishDone(ctx, done)
	}
	creds, err := r.creds.issue(u, home, log)
	if err != nil {
		log.Error().Err(err).Msg("credentials")
		done.Status, done.Text = contract.StatusError, MsgFailed
		return r.publishDone(ctx, done)
	}
	defer creds.remove()
	// Branches on: a message runs in a worktree of the project, on a
	// branch of its own, and an answer to its approval request acts on
	// it (worktree.go). dir stays the project's checkout; runDir is where
	// the run works.
	wt, wtNote, refusal := r.openWorktree(ctx, log, job, project, dir, home)
	if refusal != "" {
		done.Status, done.Text = contract.StatusError, refusal
		return r.publishDone(ctx, done)
	}
	runDir := dir
	var settled, kept bool // the worktree after the run: looked at, kept
	if wt != nil && job.Action == "" {
		runDir = wt.dir
		defer func() {
			// A run that ended early (a refusal) leaves no empty branch.
			if !settled && ctx.Err() == nil {
				wt.settle(ctx, log)
			}
		}()
	}

	tell := func(key, text string) {
		ev := contract.Event{Kind: contract.KindNotice, User: u, JobID: job.ID, Text: text}
		if err := contract.PublishEvent(ctx, r.js, ev, contract.MsgID(u, job.ID, key)); err != nil {
			log.Warn().Err(err).Msg("notice")
		}
	}
	attachments, unfetched := r.attach(runCtx, log, job, runDir, tell)
	var voices []attachment
	var files []string
	for _, a := range attachments {
		if a.Media.Voice && job.Action == "" {
			voices = append(voices, a)
		} else {
			files = append(files, a.Path)
		}
	}
	session := ""
	if !job.NewSession && job.Action == "" {
		session = readSession(home, sessionFileOf(project))
	}

	limit := newDeadline(r.cfg.Timeout, cancelRun)
	defer limit.stop()
	var (
		progressMu   sync.Mutex
		progressN    int
		lastProgress = time.Now()
		lastLine     = quote(job)
		waiting      bool // for the person's answer: no "still working"
	)
	publishProgress := func(line string) {
		progressMu.Lock()
		progressN++
		n := progressN
		progressMu.Unlock()
		ev := contract.Event{Kind: contract.KindProgress, User: u, JobID: job.ID, Text: line}
		if err := contract.PublishEvent(ctx, r.js, ev, contract.MsgID(u, job.ID, "progress", fmt.Sprint(n))); err != nil {
			log.Warn().Err(err).Msg("progress event")
		}
	}
	start := time.Now()
	stopAlive := every(r.cfg.Heartbeat/4, func() {
		progressMu.Lock()
		quiet := time.Since(lastProgress) >= r.cfg.Heartbeat && !waiting
		if quiet {
			lastProgress = time.Now()
		}
		line := lastLine
		progressMu.Unlock()
		if quiet {
			publishProgress(fmt.Sprintf("Still working (%s): %s", time.Since(start).Round(time.Second), line))
		}
	})
	defer stopAlive()
	extraEnv := taskEnv(job.ID)
	if r.bin != "" {
		extraEnv = append(extraEnv, "PATH="+r.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	var shotToken string
	if r.shots != nil {
		var env []string
		shotToken, env = r.shots.open(job, contract.TraceFrom(ctx), log)
		extraEnv = append(extraEnv, env...)
	}
	command := commandFunc(runDir, home, r.user, r.cfg.Agent != AgentShell, creds.env(extraEnv)...)
	var cg *cgroup
	if box := r.cfg.Sandbox; box != nil {
		if r.limited {
			uid, gid := -1, -1
			if r.user != nil {
				uid, gid = int(r.user.uid), int(r.user.gid)
			}
			if cg, err = newCgroup(u.Key()+"-"+newRunMark(), box.Limits, uid, gid); err != nil {
				log.Error().Err(err).Msg("run's cgroup")
				done.Status, done.Text = contract.StatusError, MsgFailed
				return r.publishDone(ctx, done)
			}
			defer cg.kill()
			// A run at its memory or process limit ends; the person is told.
			stopWatch := every(250*time.Millisecond, func() {
				if lim := cg.exceeded(); lim != nil {
					cancelRun(lim)
				}
			})
			defer stopWatch()
		}
		command = confined(command, creds.sandbox(wt.sandbox(box)), runDir, home, r.bin, cg)
	}
	run := &Run{
		Job:         job,
		Dir:         runDir,
		Attachments: files,
		Unfetched:   unfetched,
		SessionID:   session,
		Command:     command,
		OutputCap:   r.cfg.OutputCap,
		Progress: func(line string) {
			progressMu.Lock()
			lastProgress, lastLine = time.Now(), strings.TrimSuffix(line, "…")
			progressMu.Unlock()
			publishProgress(line)
		},
	}
	agent, name := r.agent, r.cfg.Agent
	switch job.Action {
	case "":
	case contract.ActionClone:
		agent, name = cloneAction{r: r, home: home, log: log}, "git clone"
	default:
		request := notedRequest(home, project)
		agent, name = gitAction{request: request}, "git "+job.Action
		if wt != nil {
			agent, name = worktreeAction{w: wt, home: home, log: log, request: request}, "git "+job.Action+" "+wt.branch
		}
	}
	if b := job.Budget; b != nil && b.LeftUSD <= 0 && job.Action == "" {
		log.Info().Str("budget", b.Of).Msg("budget used up; not running")
		done.Status, done.Text = contract.StatusBudget, fmt.Sprintf(MsgBudgetUsed, b.Of)
		return r.publishDone(ctx, done)
	}
	var conv *conversation
	if _, ok := agent.(*Claude); ok {
		// Claude Code takes answers and added messages while it works.
		if conv, err = r.converse(ctx, log, job); err != nil {
			log.Warn().Err(err).Msg("the person cannot answer questions or add to this run")
		} else {
			defer conv.stop()
			run.Steers = conv.steers
			run.Ask = r.asker(log, job, session, conv, limit, func(w bool) {
				progressMu.Lock()
				waiting, lastProgress = w, time.Now()
				progressMu.Unlock()
			})
		}
	}
	if refusal := r.hear(runCtx, log, run, voices, command, tell); refusal != "" {
		done.Status, done.Text = contract.StatusError, refusal
		return r.publishDone(ctx, done)
	}
	var res Result
	err = nil
	if runCtx.Err() == nil {
		log.Info().Str("agent", name).Str("mode", job.Mode).Msg("run started")
		res, err = agent.Run(runCtx, run)
	}
	var shots []contract.Image
	if r.shots != nil {
		shots = r.shots.close(shotToken)
	}
	done.DurationMS = time.Since(start).Milliseconds()
	done.ExitCode, done.CostUSD, done.Truncated = res.ExitCode, res.CostUSD, res.Truncated
	done.InputTokens, done.OutputTokens = res.InputTokens, res.OutputTokens
	done.Text = strings.TrimSpace(res.Text)
	var lim *errLimit
	var refused *errRefused
	if !errors.As(context.Cause(runCtx), &lim) && cg != nil {
		lim = cg.exceeded() // reached as the agent ended, before the watch saw it
	}
	switch {
	case lim != nil:
		log.Warn().Str("limit", lim.what).Str("max", lim.max).Str("used", lim.used).Msg("run ended by its limit")
		done.Status = contract.StatusError
		done.Text = joinText(lim.message(), done.Text)
	case errors.Is(context.Cause(runCtx), errCancelled):
		done.Status = contract.StatusCanceled
		done.Text = joinText(MsgCancelled, done.Text)
	case ctx.Err() != nil:
		done.Status = contract.StatusInterrupted
		done.Text = joinText(MsgInterrupted, done.Text)
	case errors.Is(context.Cause(runCtx), errRunTimeout):
		done.Status = contract.StatusTimeout
		done.Text = joinText(MsgTimeout, done.Text)
	case errors.As(err, &refused):
		log.Info().Str("action", job.Action).Str("reason", refused.msg).Msg("job refused")
		done.Status, done.Text = contract.StatusError, refused.msg
	case errors.Is(err, ErrBudget):
		log.Info().Float64("cost_usd", res.CostUSD).Msg("run stopped at its budget")
		done.Status = contract.StatusBudget
		done.Text = joinText(fmt.Sprintf(MsgBudgetStopped, job.Budget.Of), done.Text)
	case err != nil:
		// What the agent said about its failure is for the log, not the
		// person: it may name internals (API errors, paths).
		log.Error().Err(err).Int("partial_len", len(done.Text)).Msg("agent failed")
		done.Status, done.Text = contract.StatusError, MsgFailed
	default:
		done.Status = contract.StatusOK
		if done.Text == "" {
			done.Text = MsgNoOutput
		}
	}
	// Images come with the reply however the run ended (partial results):
	// only a runner shutting down leaves them.
	done.Images = shots
	if ctx.Err() == nil && job.Action == "" {
		// Images are described only after a run that was not cut short.
		describe := newDescriber(runCtx, r.cfg.DescribeImages && runCtx.Err() == nil, agent, run, res.CostUSD, log)
		images, notes := r.collectScreenshots(ctx, log, job, runDir, res.Screenshots, screenshotsPerRun-len(shots), start, describe)
		done.Images = append(done.Images, images...)
		done.Text = joinText(done.Text, strings.Join(notes, "\n"))
		if describe != nil {
			done.CostUSD += describe.spent.CostUSD
			done.InputTokens += describe.spent.InputTokens
			done.OutputTokens += describe.spent.OutputTokens
		}
	}
	if job.Action == "" && ctx.Err() == nil {
		done.Text = joinText(done.Text, r.notAdded(ctx, job, conv))
	}
	if res.SessionID != "" && job.Action == "" {
		if err := writeSession(home, sessionFileOf(project), res.SessionID); err != nil {
			log.Warn().Err(err).Msg("session not saved; the next message starts a new one")
		}
	}
	if job.Action != contract.ActionClone && ctx.Err() == nil {
		// The clone records its own branch; approve changes it.
		r.noteBranch(ctx, log, u, project, dir)
	}
	done.Text = joinText(done.Text, wtNote)
	if wt != nil && job.Action == "" && ctx.Err() == nil {
		// A run asking for approval itself (::approval::) keeps its
		// branch even without changes: the answer is about it, never
		// about the checkout.
		settled = true
		kept = (res.Approval && done.Status == contract.StatusOK) || wt.settle(ctx, log)
	}
	if job.Action == "" && done.Status == contract.StatusOK {
		ch, err := pendingChanges(runCtx, run)
		if err != nil {
			log.Warn().Err(err).Msg("could not look for changes to approve")
		}
		if ch.summary != "" || res.Approval || kept {
			done.Approval, done.Choices = true, []string{"approve", "reject"}
			text := ch.text()
			if ch.diff != "" && r.shots != nil {
				// The diff as a picture a phone shows well; the text
				// keeps the summary.
				if img, err := r.diffImage(ctx, log, job, ch.diff); err != nil {
					log.Warn().Err(err).Msg("diff not drawn; quoted as text")
				} else {
					done.Images = append(done.Images, img)
					text = ch.summary + "\n"
				}
			}
			approve, about := MsgApprove, (*worktree)(nil)
			if kept {
				approve, about = wt.approveText(), wt
			}
			done.Text = joinText(done.Text, text+approve)
			// approve and reject act on what this request is about.
			if err := about.remember(home, project); err != nil {
				log.Warn().Err(err).Msg("what the approval request is about not noted")
			}
			if err := noteRequest(home, project, job.Text); err != nil {
				log.Warn().Err(err).Msg("the approval request's request not noted")
			}
		}
	}
	if r.cfg.ShowCost && (done.CostUSD > 0 || done.InputTokens > 0) {
		done.Text = joinText(done.Text, costLine(done))
	}
	runSeconds.WithLabelValues(done.Status).Observe(float64(done.DurationMS) / 1000)
	log.Info().Str("status", done.Status).Int("exit_code", done.ExitCode).Int64("duration_ms", done.DurationMS).
		Int("reply_len", len(done.Text)).Msg("run ended")
	// Before the reply: a runner killed once the person has it must have
	// left the workspace the reply speaks of for the next runner
	// (TestTwoRunners caught a snapshot taken after the reply lost so).
	r.snapshot(context.WithoutCancel(ctx), log, u, project, dir)
	return r.publishDone(context.WithoutCancel(ctx), done)
}

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
		r.mu.Lock()
		prev := r.running[u.Key()]
		if prev == nil {
			r.running[u.Key()] = me
			r.mu.Unlock()
			return func() {
				r.mu.Lock()
				delete(r.running, u.Key())
				r.mu.Unlock()
				close(me.done)
			}, nil
		}
		r.mu.Unlock()
		select {
		case <-prev.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
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
		log := contract.TraceLog(r.log, run.trace)
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
	ack, err := contract.PublishEventAck(ctx, r.js, ev, contract.MsgID(ev.User, ev.JobID, string(ev.Kind)))
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}

// quote is how status shows a job: the start of its message.
func quote(job contract.Job) string {
	if job.Action != "" {
		return job.Action
	}
	t := strings.Join(strings.Fields(job.Text), " ")
	if r := []rune(t); len(r) > 60 {
		t = string(r[:60]) + "…"
	}
	return "“" + t + "”"
}

// publishDone publishes a run's end, retrying briefly: it is what moves
// the user on.
func (r *Runner) publishDone(ctx context.Context, done contract.Event) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return contract.PublishEvent(ctx, r.js, done, contract.MsgID(done.User, done.JobID, "done"))
}

// every calls f every d until stop is called.
func every(d time.Duration, f func()) (stop func()) {
	t := time.NewTicker(d)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				f()
			case <-quit:
				return
			}
		}
	}()
	return func() { t.Stop(); close(quit) }
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

var (
	runSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "textslash_run_duration_seconds",
		Help:    "How long agent runs took, by how they ended (ok, error, timeout, canceled, interrupted).",
		Buckets: []float64{0.01, 0.1, 1, 5, 15, 30, 60, 120, 300, 600},
	}, []string{"status"})
	shotSeconds = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "textslash_screenshot_duration_seconds",
		Help:    "How long screenshots took in the runner's browser, by result (ok, error).",
		Buckets: []float64{0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30},
	}, []string{"result"})
)
