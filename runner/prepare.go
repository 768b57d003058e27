package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/clock"
	"github.com/textslash/textslash/runner/disk"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/home"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/sandbox/netns"
	"github.com/textslash/textslash/runner/session"
	"github.com/textslash/textslash/runner/workspace"
)

// prepared is what prepare readied for the agent: where the run works,
// its clocks, how its programs start and what they run in, the agent and
// what it is given.
type prepared struct {
	*place
	clocks
	*enclosure
	agent agent.Agent
	name  string     // the agent, for the log
	spec  *agent.Run // what the agent is given
	conv  *conversation
}

// place is where a run works: the person's disk, the project's
// workspace, the agent's home and credentials, the worktree.
type place struct {
	disk    *disk.Disk // the person's disk, or nil: not bounded
	project string
	dir     string // the project's checkout
	home    string // the agent's home: the person's, whatever the project
	runDir  string // where the agent works: dir, or the worktree's
	creds   *sandbox.RunCredentials
	wt      *workspace.Worktree // the job's worktree, or nil
	wtNote  string              // why a message has no worktree
	settled bool                // the worktree was looked at after the run (report)
}

// clocks are a run's time limit and its progress, from its start.
type clocks struct {
	start time.Time
	limit *clock.Deadline
	prog  *clock.Progress
}

// enclosure is how a run starts its programs (command), and what they run
// in: the person's home, or a sandbox, cgroup and network of their own.
type enclosure struct {
	command func(ctx context.Context, name string, args ...string) *exec.Cmd
	kept    *home.State     // what the runner keeps with the run's home, or nil
	net     *netns.Net      // the home's network, nil: the host's
	ended   func()          // ends what the run left in its home, once the agent returned
	cg      *sandbox.Cgroup // the run's cgroup, or nil
	homeID  string          // the home's id, for the log; "": none
	shotTok string          // the run's token at the screenshot endpoint
	task    string          // the run's task id (handover.TaskID, or its home's)
}

// logged is ctx, its log naming the run's home if it has one.
func (e *enclosure) logged(ctx context.Context) context.Context {
	if e.homeID == "" {
		return ctx
	}
	return zerolog.Ctx(ctx).With().Str("home", e.homeID).Logger().WithContext(ctx)
}

// prepare readies what the agent runs with: its workspace, credentials
// and worktree, the job's attachments, the run's clocks, the command
// starting its programs and the agent itself. ctx is the job's, runCtx
// the run's. A refused error says why the run cannot go on.
func (ru *run) prepare(ctx, runCtx context.Context) (*prepared, error) {
	tell := ru.teller(ctx)
	pl, err := ru.place(ctx, tell)
	if err != nil {
		return nil, err
	}
	files, unfetched, voices := ru.attachments(runCtx, pl, tell)
	resume := ""
	if !ru.job.NewSession && ru.job.Action == "" {
		resume = session.Read(pl.home, session.FileOf(pl.project))
	}
	p := &prepared{place: pl, clocks: ru.clocks(ctx)}
	if p.enclosure, err = ru.enclose(ctx, pl); err != nil {
		return nil, err
	}
	ctx, runCtx = p.logged(ctx), p.logged(runCtx)
	p.spec = &agent.Run{
		Job:         ru.job,
		Dir:         pl.runDir,
		Attachments: files,
		Unfetched:   unfetched,
		SessionID:   resume,
		Command:     p.command,
		OutputCap:   ru.r.cfg.OutputCap,
		Progress:    p.prog.Report,
	}
	if total, ok := session.ReadTotal(pl.home, session.FileOf(pl.project), resume); ok {
		p.spec.SessionTotal = &total
	}
	p.agent, p.name = ru.pickAgent(ctx, pl, p.enclosure)
	if agent.KeepsWarm(p.agent) && p.kept != nil && ru.job.Action == "" {
		p.spec.Warm = p.kept.Warm
	}
	if b := ru.job.Budget; b != nil && b.LeftUSD <= 0 && ru.job.Action == "" {
		zerolog.Ctx(ctx).Info().Str("budget", b.Of).Msg("budget used up; not running")
		return nil, &refused{status: contract.StatusBudget, text: fmt.Sprintf(MsgBudgetUsed, b.Of)}
	}
	ru.converse(ctx, p)
	if err := ru.r.hear(runCtx, p.spec, voices, p.command, tell); err != nil {
		return nil, err
	}
	return p, nil
}

// place readies where the run works, in ctx (the job's): the person's
// disk mounted, the project's workspace, the agent's home, the person's
// credentials and the job's worktree; a refused error says why the job
// cannot run.
func (ru *run) place(ctx context.Context, tell func(key, text string)) (*place, error) {
	d, err := ru.mountDisk(ctx)
	if err != nil {
		return nil, err
	}
	pl, err := ru.workspace(ctx, d, tell)
	if err != nil {
		return nil, err
	}
	return pl, ru.worktree(ctx, pl)
}

// workspace readies the job's project's workspace, the agent's home (the
// person's, whatever the project) and the person's credentials, in ctx
// (the job's), once their disk d (nil: none) is mounted, telling the
// person with tell; a refused error says why the job cannot run.
func (ru *run) workspace(ctx context.Context, d *disk.Disk, tell func(key, text string)) (*place, error) {
	r, u, log := ru.r, ru.job.User, zerolog.Ctx(ctx)
	pl := &place{disk: d}
	// Copies this runner kept from an earlier time it held the person go
	// first: their snapshots are newer.
	if r.tookOver(u) {
		var aside workspace.Aside // nil: <Root>/.stale/
		if d != nil {
			aside = d // on the person's disk, out of their runs' sight
		}
		r.ws.SetAside(ctx, u, aside)
	}
	// A new disk's empty workspace, or one just set aside, is not the
	// person's: theirs, if they have one, is in its snapshot.
	fresh := d != nil && d.Fresh()
	var err error
	if pl.project, pl.dir, err = r.ws.Pick(ctx, ru.job, fresh, tell); err != nil {
		return nil, ru.refusedBy(ctx, err, "workspace")
	}
	if fresh && pl.project == "" {
		// Only once the default workspace was picked: the fresh disk's
		// (or set aside) default workspace waits for its own job.
		if err := d.Used(); err != nil {
			log.Warn().Err(err).Msg("person's disk not marked used; the next job looks for a snapshot again")
		}
	}
	pl.home = r.ws.Home(u)
	made := pl.dir
	if ru.job.Action == contract.ActionClone {
		made = pl.home // the clone makes the project's workspace, once checked
	}
	if err := sandbox.PrepareWorkspace(made, pl.home, r.user); err != nil {
		log.Error().Err(err).Msg("workspace")
		return nil, refuse(MsgFailed)
	}
	if pl.creds, err = r.creds.Issue(u, pl.home, *log); err != nil {
		log.Error().Err(err).Msg("credentials")
		return nil, refuse(MsgFailed)
	}
	ru.later(pl.creds.Remove)
	pl.runDir = pl.dir // until a worktree has it
	return pl, nil
}

// mountDisk mounts the person's disk, when disks are bounded (else d is
// nil), before anything reads or writes their directories, in ctx (the
// job's). What they had that does not fit in it stays where it was,
// unbounded (logged); any other failure keeps the job from running.
func (ru *run) mountDisk(ctx context.Context) (*disk.Disk, error) {
	r, u := ru.r, ru.job.User
	if r.disks == nil {
		return nil, nil
	}
	ws, projects, worktrees, home := r.ws.PersonDirs(u)
	d, err := r.disks.Mount(ctx, u.Key(), []disk.Bind{
		{Name: "workspace", Target: ws}, {Name: "projects", Target: projects},
		{Name: "worktrees", Target: worktrees}, {Name: "home", Target: home},
	})
	switch {
	case errors.Is(err, disk.ErrTooFull):
		zerolog.Ctx(ctx).Error().Err(err).Msg("this person's disk is NOT bounded: what they had does not fit in TEXTSLASH_DISK_QUOTA, and stays where it was")
		return nil, nil
	case err != nil:
		zerolog.Ctx(ctx).Error().Err(err).Msg("person's disk")
		return nil, refuse(MsgFailed)
	}
	ru.later(func() {
		r.disks.Leave(d)
		go r.sweepDisks()
	})
	return d, nil
}

// worktree opens the job's worktree, with branches on: a message runs in
// a worktree of the project, on a branch of its own, and an answer to its
// approval request acts on it (workspace.Worktree). pl.dir stays the
// project's checkout; pl.runDir is where the run works. ctx is the job's.
func (ru *run) worktree(ctx context.Context, pl *place) error {
	var err error
	pl.wt, pl.wtNote, err = ru.r.ws.OpenWorktree(ctx, ru.job, pl.project, pl.dir, pl.home)
	if err != nil {
		return ru.refusedBy(ctx, err, "worktree")
	}
	if pl.wt != nil && ru.job.Action == "" {
		pl.runDir = pl.wt.Dir()
		ru.later(func() {
			// A run that ended early (a refusal) leaves no empty branch.
			if !pl.settled && ctx.Err() == nil {
				pl.wt.Settle(ctx)
			}
		})
	}
	return nil
}

// refusedBy is the refusal err, which keeps the job from running, makes:
// a workspace.Refusal's text as it is, anything else MsgFailed (the
// error logged, under what).
func (ru *run) refusedBy(ctx context.Context, err error, what string) error {
	if r, ok := errors.AsType[*workspace.Refusal](err); ok {
		return refuse(r.Text)
	}
	zerolog.Ctx(ctx).Error().Err(err).Msg(what)
	return refuse(MsgFailed)
}

// attachments fetches the job's attachments into the workspace: the
// files the agent is given, and how many could not be fetched. A
// message's voice notes are kept apart, to be heard (voice.go). runCtx
// is the run's; tell tells the person of attachments not fetched.
func (ru *run) attachments(runCtx context.Context, pl *place, tell func(key, text string)) (files []string, unfetched int, voices []attachment) {
	attachments, unfetched := ru.r.attach(runCtx, ru.job, pl.runDir, tell)
	for _, a := range attachments {
		if a.Media.Voice && ru.job.Action == "" {
			voices = append(voices, a)
		} else {
			files = append(files, a.Path)
		}
	}
	return files, unfetched, voices
}

// clocks starts the run's time limit and its progress heartbeat, whose
// events are published in ctx (the job's).
func (ru *run) clocks(ctx context.Context) (c clocks) {
	cfg := ru.r.cfg
	c.limit = clock.NewDeadline(cfg.Timeout, func() { ru.cancel(errRunTimeout) })
	ru.later(c.limit.Stop)
	c.start = time.Now()
	c.prog = clock.NewProgress(cfg.Heartbeat, quote(ru.job), c.start, ru.progressPublisher(ctx))
	ru.later(ru.pulse.On(cfg.Heartbeat/4, c.prog.Beat))
	return c
}

// ModeVar holds the job's permission mode (contract.ModeAsk, …) in every
// agent's environment: a command agent decides what it means.
const ModeVar = "TEXTSLASH_MODE"

// enclose readies how the run starts its programs (command): as the
// agent user in the run's directory, told its task and mode, the agents'
// textslash command, its screenshot endpoint and its credentials; in the
// person's home when the runner keeps homes, else in a sandbox and a
// cgroup of its own when runs have them, and a network of its own when
// homes have one (ownNet). ctx (the job's) gives the endpoint the job's
// trace. A refused error ends the run.
func (ru *run) enclose(ctx context.Context, pl *place) (e *enclosure, err error) {
	r := ru.r
	e = &enclosure{}
	box := r.cfg.Sandbox
	var h *sandbox.Home
	if box != nil {
		box = pl.creds.Sandbox(pl.wt.Sandbox(box))
		if r.homes != nil && ru.job.Action == "" {
			// A message's run; a clone or an answer to an approval request
			// (git, whose directory may not be there yet) has a sandbox of
			// its own.
			if h, err = ru.enterHome(ctx, e, pl, box); err != nil {
				return nil, err
			}
		}
	}
	command := sandbox.CommandFunc(pl.runDir, pl.home, r.user, r.cfg.Agent != AgentShell, pl.creds.Env(ru.env(ctx, e))...)
	switch {
	case box == nil:
		e.command = command
		return e, nil
	case h != nil:
		e.command = h.Confined(command)
		if r.shots != nil {
			r.shots.SetHome(e.shotTok, home.Hands{K: r.homes, H: h, Person: ru.job.User.Key(), Command: e.command})
		}
		return e, nil
	}
	if r.limited {
		if err := ru.limits(e, box); err != nil {
			zerolog.Ctx(ctx).Error().Err(err).Msg("run's cgroup")
			return nil, refuse(MsgFailed)
		}
	}
	if box, err = ru.ownNet(ctx, box); err != nil {
		return nil, err
	}
	e.command = sandbox.Confined(command, box, pl.runDir, pl.home, r.bin, e.cg)
	return e, nil
}

// ownNet is box for a run not in a home (a clone, an answer to an
// approval request) when homes have a network of their own: its programs
// get one too (sandbox.RunNet), closed when the run ends. Its git runs
// the hooks, filters and commands the agent wrote into the repository's
// .git, which must reach no more of the host than the agent does; a
// clone or a push reaches remotes as a home does.
func (ru *run) ownNet(ctx context.Context, box *sandbox.Sandbox) (*sandbox.Sandbox, error) {
	log := zerolog.Ctx(ctx)
	if ru.r.homes == nil {
		return box, nil
	}
	n, err := ru.r.homes.RunNet(*log)
	if err != nil {
		log.Error().Err(err).Msg("run's network")
		return nil, refuse(MsgFailed)
	}
	if n == nil {
		return box, nil // homes share the host's network: so does the run
	}
	ru.later(n.Close)
	return box.InNet(n), nil
}

// env is what the run's programs are told: the task, the mode, where the
// agents' textslash command is, the screenshot endpoint. For Claude Code
// in a home, the task (but a Notion task's) and the endpoint's token are
// the home's, the same for each of its runs: the agent kept warm there
// keeps the environment it was started with.
func (ru *run) env(ctx context.Context, e *enclosure) []string {
	r := ru.r
	mode := ru.job.Mode
	if mode == "" {
		mode = contract.ModeAsk
	}
	e.task = handover.TaskID(ru.job.ID)
	token := handover.NewToken()
	if agent.KeepsWarm(r.agent) && e.kept != nil {
		hs := e.kept
		token = hs.Token
		if _, notion := contract.NotionPage(ru.job.ID); !notion {
			e.task = hs.Task
		}
	}
	env := handover.TaskEnv(e.task)
	if _, acp := r.agent.(*agent.ACP); !acp {
		// An ACP agent's mode goes by the protocol; one warm agent serves
		// every mode.
		env = append(env, ModeVar+"="+mode)
	}
	if r.bin != "" {
		env = append(env, "PATH="+r.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	if r.shots != nil {
		var shot []string
		var proxy func() (string, error)
		if e.net != nil {
			proxy = e.net.ProxyURL
		}
		e.shotTok, shot = r.shots.BeginWith(token, ru.job, contract.TraceFrom(ctx), *zerolog.Ctx(ctx), proxy)
		env = append(env, shot...)
	}
	return env
}

// enterHome puts the run in its person's home (made now when there is
// none), whose limits apply to the run; what the run leaves running there
// ends with it, but the agent kept warm.
func (ru *run) enterHome(ctx context.Context, e *enclosure, pl *place, box *sandbox.Sandbox) (*sandbox.Home, error) {
	log := zerolog.Ctx(ctx)
	h, leave, err := ru.r.homes.Enter(box, pl.runDir, pl.home, ru.r.bin, ru.r.user, *log)
	if err != nil {
		log.Error().Err(err).Msg("home")
		return nil, refuse(MsgFailed)
	}
	kept := ru.r.homes.For(h.ID(), ru.job.User.Key())
	e.kept, e.net = kept, h.Net()
	ru.r.homes.Entered(kept, h)
	// What the run started ends as soon as the agent returns, before the
	// person is told the run is over; the warm agent stays.
	e.ended = func() {
		h.Keep(kept.Warm.Pids()...)
		h.EndRun()
	}
	ru.later(leave)
	e.homeID = h.ID()
	if cg := h.Cgroup(); cg != nil {
		cg.Begin()
		ru.watch(e, cg)
	}
	return h, nil
}

// limits gives the run a cgroup with the sandbox's limits. A run at its
// memory or process limit ends; the person is told.
func (ru *run) limits(e *enclosure, box *sandbox.Sandbox) error {
	uid, gid := -1, -1
	if u := ru.r.user; u != nil {
		uid, gid = int(u.UID), int(u.GID)
	}
	cg, err := sandbox.NewCgroup("r"+sandbox.NewMark(), box.Limits, uid, gid) // opaque: no person's name in a kernel name
	if err != nil {
		return err
	}
	ru.later(cg.Kill)
	ru.watch(e, cg)
	return nil
}

// watch makes cg the run's cgroup: a run at one of its limits ends, and
// the person is told which.
func (ru *run) watch(e *enclosure, cg *sandbox.Cgroup) {
	e.cg = cg
	ru.later(ru.pulse.On(250*time.Millisecond, func() {
		if lim := cg.Exceeded(); lim != nil {
			ru.cancel(lim)
		}
	}))
}

// pickAgent picks what runs the job (and its name, for the log): the
// agent for a message, git for a clone or an answer to an approval
// request (on the worktree's branch when the request was about one).
func (ru *run) pickAgent(ctx context.Context, pl *place, e *enclosure) (a agent.Agent, name string) {
	r, job := ru.r, ru.job
	switch job.Action {
	case "":
		return r.agent, r.cfg.Agent
	case contract.ActionHome:
		return homeAgent{r: r, token: func() string { return e.shotTok }}, "home keyword"
	case contract.ActionClone:
		return r.ws.Clone(pl.home, *zerolog.Ctx(ctx)), "git clone"
	}
	name = "git " + job.Action
	if pl.wt != nil {
		name += " " + pl.wt.Branch()
	}
	return workspace.Answer(pl.wt, pl.home, pl.project, *zerolog.Ctx(ctx)), name
}

// converse lets the person answer Claude Code's questions and add
// messages while it works; the conversation is read in ctx (the job's).
func (ru *run) converse(ctx context.Context, p *prepared) {
	if !agent.Asks(p.agent) {
		return
	}
	conv, err := ru.r.converse(ctx, ru.job)
	if err != nil {
		zerolog.Ctx(ctx).Warn().Err(err).Msg("the person cannot answer questions or add to this run")
		return
	}
	p.conv = conv
	ru.later(conv.stop)
	p.spec.Steers = conv.steers
	p.spec.Ask = ru.r.asker(*zerolog.Ctx(ctx), ru.job, p.spec.SessionID, conv, p.limit, p.prog.Wait)
}
