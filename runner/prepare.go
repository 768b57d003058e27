package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/disk"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/session"
	"github.com/textslash/textslash/runner/workspace"
)

// prepare readies what the agent runs with: its workspace, credentials
// and worktree, the job's attachments, the run's clocks, the command
// starting its programs and the agent itself. ctx is the job's, runCtx
// the run's. A refused error says why the run cannot go on.
func (ru *run) prepare(ctx, runCtx context.Context) error {
	tell := ru.teller(ctx)
	err := ru.mountDisk(ctx)
	if err == nil {
		err = ru.workspace(ctx, tell)
	}
	if err == nil {
		err = ru.worktree(ctx)
	}
	if err != nil {
		return err
	}
	files, unfetched := ru.attachments(runCtx, tell)
	resume := ""
	if !ru.job.NewSession && ru.job.Action == "" {
		resume = session.Read(ru.home, session.FileOf(ru.project))
	}
	ru.clocks(ctx)
	command, err := ru.command(ctx)
	if err != nil {
		return err
	}
	ru.spec = &agent.Run{
		Job:         ru.job,
		Dir:         ru.runDir,
		Attachments: files,
		Unfetched:   unfetched,
		SessionID:   resume,
		Command:     command,
		OutputCap:   ru.r.cfg.OutputCap,
		Progress:    ru.prog.report,
	}
	if total, ok := session.ReadTotal(ru.home, session.FileOf(ru.project), resume); ok {
		ru.spec.SessionTotal = &total
	}
	ru.pickAgent()
	if agent.KeepsWarm(ru.agent) && ru.kept != nil && ru.job.Action == "" {
		ru.spec.Warm = ru.kept.warm
	}
	if b := ru.job.Budget; b != nil && b.LeftUSD <= 0 && ru.job.Action == "" {
		ru.log.Info().Str("budget", b.Of).Msg("budget used up; not running")
		return &refused{status: contract.StatusBudget, text: fmt.Sprintf(MsgBudgetUsed, b.Of)}
	}
	ru.converse(ctx)
	return ru.r.hear(runCtx, ru.log, ru.spec, ru.voices, command, tell)
}

// workspace readies the job's project's workspace, the agent's home (the
// person's, whatever the project) and the person's credentials, in ctx
// (the job's), once their disk is mounted, telling the person with tell;
// a refused error says why the job cannot run.
func (ru *run) workspace(ctx context.Context, tell func(key, text string)) error {
	r, u, log := ru.r, ru.job.User, ru.log
	// Copies this runner kept from an earlier time it held the person go
	// first: their snapshots are newer.
	if r.tookOver(u) {
		var aside workspace.Aside // nil: <Root>/.stale/
		if ru.disk != nil {
			aside = ru.disk // on the person's disk, out of their runs' sight
		}
		r.ws.SetAside(ctx, log, u, aside)
	}
	// A new disk's empty workspace, or one just set aside, is not the
	// person's: theirs, if they have one, is in its snapshot.
	fresh := ru.disk != nil && ru.disk.Fresh()
	var err error
	if ru.project, ru.dir, err = r.ws.Pick(ctx, log, ru.job, fresh, tell); err != nil {
		return ru.refusedBy(err, "workspace")
	}
	if fresh && ru.project == "" {
		// Only once the default workspace was picked: the fresh disk's
		// (or set aside) default workspace waits for its own job.
		if err := ru.disk.Used(); err != nil {
			log.Warn().Err(err).Msg("person's disk not marked used; the next job looks for a snapshot again")
		}
	}
	ru.home = r.ws.Home(u)
	made := ru.dir
	if ru.job.Action == contract.ActionClone {
		made = ru.home // the clone makes the project's workspace, once checked
	}
	if err := sandbox.PrepareWorkspace(made, ru.home, r.user); err != nil {
		log.Error().Err(err).Msg("workspace")
		return refuse(MsgFailed)
	}
	creds, err := r.creds.Issue(u, ru.home, log)
	if err != nil {
		log.Error().Err(err).Msg("credentials")
		return refuse(MsgFailed)
	}
	ru.creds = creds
	ru.later(creds.Remove)
	return nil
}

// mountDisk mounts the person's disk, when disks are bounded, before
// anything reads or writes their directories, in ctx (the job's). What
// they had that does not fit in it stays where it was, unbounded (logged);
// any other failure keeps the job from running.
func (ru *run) mountDisk(ctx context.Context) error {
	r, u := ru.r, ru.job.User
	if r.disks == nil {
		return nil
	}
	ws, projects, worktrees, home := r.ws.PersonDirs(u)
	d, err := r.disks.Mount(ctx, u.Key(), []disk.Bind{
		{Name: "workspace", Target: ws}, {Name: "projects", Target: projects},
		{Name: "worktrees", Target: worktrees}, {Name: "home", Target: home},
	})
	switch {
	case errors.Is(err, disk.ErrTooFull):
		ru.log.Error().Err(err).Msg("this person's disk is NOT bounded: what they had does not fit in TEXTSLASH_DISK_QUOTA, and stays where it was")
		return nil
	case err != nil:
		ru.log.Error().Err(err).Msg("person's disk")
		return refuse(MsgFailed)
	}
	ru.disk = d
	ru.later(func() {
		r.disks.Leave(d)
		go r.sweepDisks()
	})
	return nil
}

// worktree opens the job's worktree, with branches on: a message runs in
// a worktree of the project, on a branch of its own, and an answer to its
// approval request acts on it (workspace.Worktree). ru.dir stays the
// project's checkout; ru.runDir is where the run works. ctx is the job's.
func (ru *run) worktree(ctx context.Context) error {
	var err error
	ru.wt, ru.wtNote, err = ru.r.ws.OpenWorktree(ctx, ru.log, ru.job, ru.project, ru.dir, ru.home)
	if err != nil {
		return ru.refusedBy(err, "worktree")
	}
	ru.runDir = ru.dir
	if ru.wt != nil && ru.job.Action == "" {
		ru.runDir = ru.wt.Dir()
		ru.later(func() {
			// A run that ended early (a refusal) leaves no empty branch.
			if !ru.settled && ctx.Err() == nil {
				ru.wt.Settle(ctx, ru.log)
			}
		})
	}
	return nil
}

// refusedBy is the refusal err, which keeps the job from running, makes:
// a workspace.Refusal's text as it is, anything else MsgFailed (the
// error logged, under what).
func (ru *run) refusedBy(err error, what string) error {
	if r, ok := errors.AsType[*workspace.Refusal](err); ok {
		return refuse(r.Text)
	}
	ru.log.Error().Err(err).Msg(what)
	return refuse(MsgFailed)
}

// attachments fetches the job's attachments into the workspace: the
// files the agent is given, and how many could not be fetched. A
// message's voice notes are kept apart, to be heard (voice.go). runCtx
// is the run's; tell tells the person of attachments not fetched.
func (ru *run) attachments(runCtx context.Context, tell func(key, text string)) (files []string, unfetched int) {
	attachments, unfetched := ru.r.attach(runCtx, ru.log, ru.job, ru.runDir, tell)
	for _, a := range attachments {
		if a.Media.Voice && ru.job.Action == "" {
			ru.voices = append(ru.voices, a)
		} else {
			files = append(files, a.Path)
		}
	}
	return files, unfetched
}

// clocks starts the run's time limit and its progress heartbeat, whose
// events are published in ctx (the job's).
func (ru *run) clocks(ctx context.Context) {
	cfg := ru.r.cfg
	ru.limit = newDeadline(cfg.Timeout, ru.cancel)
	ru.later(ru.limit.stop)
	ru.start = time.Now()
	ru.prog = newProgress(cfg.Heartbeat, quote(ru.job), ru.start, ru.progressPublisher(ctx))
	ru.later(ru.pulse.on(cfg.Heartbeat/4, ru.prog.beat))
}

// ModeVar holds the job's permission mode (contract.ModeAsk, …) in every
// agent's environment: a command agent decides what it means.
const ModeVar = "TEXTSLASH_MODE"

// command is how the run starts its programs: as the agent user in the
// run's directory, told its task and mode, the agents' textslash command, its
// screenshot endpoint and its credentials; in the person's home when the
// runner keeps homes, else in a sandbox and a cgroup of its own when runs
// have them, and a network of its own when homes have one (ownNet). ctx
// (the job's) gives the endpoint the job's trace. A refused error ends
// the run.
func (ru *run) command(ctx context.Context) (command func(ctx context.Context, name string, args ...string) *exec.Cmd, err error) {
	r := ru.r
	box := r.cfg.Sandbox
	var h *sandbox.Home
	if box != nil {
		box = ru.creds.Sandbox(ru.wt.Sandbox(box))
		if r.homes != nil && ru.job.Action == "" {
			// A message's run; a clone or an answer to an approval request
			// (git, whose directory may not be there yet) has a sandbox of
			// its own.
			if h, err = ru.enterHome(box); err != nil {
				return nil, err
			}
		}
	}
	command = sandbox.CommandFunc(ru.runDir, ru.home, r.user, r.cfg.Agent != AgentShell, ru.creds.Env(ru.env(ctx))...)
	switch {
	case box == nil:
		return command, nil
	case h != nil:
		confined := h.Confined(command)
		if r.shots != nil {
			r.shots.SetHome(ru.shotTok, homeHands{r: r, h: h, person: ru.job.User.Key(), command: confined})
		}
		return confined, nil
	}
	if r.limited {
		if err := ru.limits(box); err != nil {
			ru.log.Error().Err(err).Msg("run's cgroup")
			return nil, refuse(MsgFailed)
		}
	}
	if box, err = ru.ownNet(box); err != nil {
		return nil, err
	}
	return sandbox.Confined(command, box, ru.runDir, ru.home, r.bin, ru.cg), nil
}

// ownNet is box for a run not in a home (a clone, an answer to an
// approval request) when homes have a network of their own: its programs
// get one too (sandbox.RunNet), closed when the run ends. Its git runs
// the hooks, filters and commands the agent wrote into the repository's
// .git, which must reach no more of the host than the agent does; a
// clone or a push reaches remotes as a home does.
func (ru *run) ownNet(box *sandbox.Sandbox) (*sandbox.Sandbox, error) {
	if ru.r.homes == nil {
		return box, nil
	}
	n, err := ru.r.homes.RunNet(ru.log)
	if err != nil {
		ru.log.Error().Err(err).Msg("run's network")
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
func (ru *run) env(ctx context.Context) []string {
	r := ru.r
	mode := ru.job.Mode
	if mode == "" {
		mode = contract.ModeAsk
	}
	ru.task = handover.TaskID(ru.job.ID)
	token := handover.NewToken()
	if agent.KeepsWarm(r.agent) && ru.kept != nil {
		hs := ru.kept
		token = hs.token
		if _, notion := contract.NotionPage(ru.job.ID); !notion {
			ru.task = hs.task
		}
	}
	env := handover.TaskEnv(ru.task)
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
		if ru.net != nil {
			proxy = ru.net.ProxyURL
		}
		ru.shotTok, shot = r.shots.BeginWith(token, ru.job, contract.TraceFrom(ctx), ru.log, proxy)
		env = append(env, shot...)
	}
	return env
}

// enterHome puts the run in its person's home (made now when there is
// none), whose limits apply to the run; what the run leaves running there
// ends with it, but the agent kept warm.
func (ru *run) enterHome(box *sandbox.Sandbox) (*sandbox.Home, error) {
	h, leave, err := ru.r.homes.Enter(box, ru.runDir, ru.home, ru.r.bin, ru.r.user, ru.log)
	if err != nil {
		ru.log.Error().Err(err).Msg("home")
		return nil, refuse(MsgFailed)
	}
	ru.kept, ru.net = ru.r.keptFor(h.ID(), ru.job.User.Key()), h.Net()
	ru.r.mu.Lock()
	ru.kept.home = h
	ru.r.mu.Unlock()
	// What the run started ends as soon as the agent returns, before the
	// person is told the run is over; the warm agent stays.
	ru.ended = func() {
		h.Keep(ru.kept.warm.Pids()...)
		h.EndRun()
	}
	ru.later(leave)
	ru.log = ru.log.With().Str("home", h.ID()).Logger()
	if cg := h.Cgroup(); cg != nil {
		cg.Begin()
		ru.watch(cg)
	}
	return h, nil
}

// limits gives the run a cgroup with the sandbox's limits. A run at its
// memory or process limit ends; the person is told.
func (ru *run) limits(box *sandbox.Sandbox) error {
	uid, gid := -1, -1
	if u := ru.r.user; u != nil {
		uid, gid = int(u.UID), int(u.GID)
	}
	cg, err := sandbox.NewCgroup("r"+sandbox.NewMark(), box.Limits, uid, gid) // opaque: no person's name in a kernel name
	if err != nil {
		return err
	}
	ru.later(cg.Kill)
	ru.watch(cg)
	return nil
}

// watch makes cg the run's cgroup: a run at one of its limits ends, and
// the person is told which.
func (ru *run) watch(cg *sandbox.Cgroup) {
	ru.cg = cg
	ru.later(ru.pulse.on(250*time.Millisecond, func() {
		if lim := cg.Exceeded(); lim != nil {
			ru.cancel(lim)
		}
	}))
}

// pickAgent picks what runs the job: the agent for a message, git for a
// clone or an answer to an approval request (on the worktree's branch
// when the request was about one).
func (ru *run) pickAgent() {
	r, job := ru.r, ru.job
	ru.agent, ru.name = r.agent, r.cfg.Agent
	switch job.Action {
	case "":
	case contract.ActionHome:
		ru.agent, ru.name = homeAgent{r: r, token: func() string { return ru.shotTok }}, "home keyword"
	case contract.ActionClone:
		ru.agent, ru.name = r.ws.Clone(ru.home, ru.log), "git clone"
	default:
		ru.agent, ru.name = workspace.Answer(ru.wt, ru.home, ru.project, ru.log), "git "+job.Action
		if ru.wt != nil {
			ru.name += " " + ru.wt.Branch()
		}
	}
}

// converse lets the person answer Claude Code's questions and add
// messages while it works; the conversation is read in ctx (the job's).
func (ru *run) converse(ctx context.Context) {
	if !agent.Asks(ru.agent) {
		return
	}
	conv, err := ru.r.converse(ctx, ru.log, ru.job)
	if err != nil {
		ru.log.Warn().Err(err).Msg("the person cannot answer questions or add to this run")
		return
	}
	ru.conv = conv
	ru.later(conv.stop)
	ru.spec.Steers = conv.steers
	ru.spec.Ask = ru.r.asker(ru.log, ru.job, ru.spec.SessionID, conv, ru.limit, ru.prog.wait)
}
