package runner

import (
	"errors"
	"fmt"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/disk"
	"github.com/textslash/textslash/runner/memory"
	"github.com/textslash/textslash/runner/preview"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/snapshot"
	"github.com/textslash/textslash/runner/voice"
	"github.com/textslash/textslash/runner/workspace"
)

// service names the runner in its ConfigErrors.
const service = "runner"

// DefaultProjectMaxBytes is Config.ProjectMaxBytes' default.
const DefaultProjectMaxBytes = workspace.DefaultProjectMax

// DefaultSnapshotMax is Config.SnapshotMax's default.
const DefaultSnapshotMax = snapshot.DefaultMax

// Agent names for Config.Agent.
const (
	AgentShell  = contract.AgentShell
	AgentClaude = contract.AgentClaude
)

// Config of the runner.
type Config struct {
	// Agent is "shell", "claude", an agent spoken to over the Agent Client
	// Protocol ("gemini", "codex", "opencode", or "acp:" and its command
	// line), or any other command line, run as the agent with bash -c (see
	// Command); empty picks claude when its binary is found, else shell.
	Agent string
	// ClaudeBin is the Claude Code binary; empty looks up "claude" in PATH.
	ClaudeBin string
	// AgentBin is the program of an agent spoken to over the Agent Client
	// Protocol by name (gemini, codex, opencode); empty looks up its usual
	// one in PATH (gemini, codex-acp, opencode).
	AgentBin string
	// Workspaces holds one directory per user (and agents' homes in .home).
	Workspaces string
	// AgentUser is the OS user agents run as; needed when running as root
	// for Claude Code, which refuses root.
	AgentUser string
	// Concurrency, when above 0, is how many users' jobs run at once; 0
	// (the default) leaves it to memory: a job starts once the machine
	// has room for its agent and MemoryFree besides (memory.go).
	Concurrency int
	// MemoryFree is the memory runs and homes leave free on the machine
	// (or under its container's limit): 0 is a tenth of it, between 256
	// MB and 2 GB. Used when Concurrency is 0.
	MemoryFree int64
	// Timeout ends a run that takes longer. Time spent waiting for the
	// person's answer to a question does not count.
	Timeout time.Duration
	// DefaultMode is the permission mode of people who have not chosen
	// one (the dispatcher's, which puts it in their jobs): the homes made
	// again after a restart start their agent in it, as their next
	// message will run. Empty: contract.ModeAsk.
	DefaultMode string
	// PermissionTimeout is how long a question waits for the person (the
	// dispatcher denies it then); the runner gives up a minute later on
	// its own, should the dispatcher be gone. Default 10 minutes.
	PermissionTimeout time.Duration
	// OutputCap is the most output kept of one run.
	OutputCap int
	// Heartbeat: a run with no progress for this long reports that it is
	// still going ("Still working (4m12s): Running `npm test`"). Default 60s.
	Heartbeat time.Duration
	// IdleExit ends Run after this long without a job, so that a
	// standalone runner with no work exits (JetStream keeps what arrives
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
	// Sandbox, when set, confines each run (see sandbox.Sandbox); nil runs agents
	// unconfined, as the agent user only.
	Sandbox *sandbox.Sandbox
	// ShowCost appends a run's cost and tokens to its reply.
	ShowCost bool
	// Transcriber turns voice notes into the message's text; nil tells
	// the person voice notes cannot be taken here.
	Transcriber voice.Transcriber
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
	// from there (runner/workspace/follow.go). SnapshotMax caps one
	// snapshot, counted before compression (default DefaultSnapshotMax);
	// what does not fit is left out, and the person told when it is
	// restored.
	Snapshots   bool
	SnapshotMax int64
	// DiskQuota bounds what each person keeps on this runner (their
	// workspace, projects, worktrees and agent's home together) on a disk
	// of their own (package disk); a write past it fails inside the run,
	// and the person is told their workspace is full. Zero: no bound;
	// textslash's default is 5 GiB. Where disks cannot be made (not root,
	// no loop devices) the runner runs without bounds and says so.
	DiskQuota int64
	// Credentials is the directory of people's git credentials (see
	// sandbox.Credentials): one subdirectory per person, named by
	// contract.PersonKey; each run of theirs gets a read-only copy at
	// sandbox.CredentialsPath. Handed out only in the sandbox.
	Credentials string
	// HomesMax, when above 0, is the most homes kept at once
	// (sandbox.Homes); 0 (the default) keeps them as long as memory
	// allows (a warm agent goes before its home); less than 0 keeps none
	// (each run in a sandbox of its own). HomeIdle is how long a home is kept after its
	// last run (default sandbox.DefaultHomeIdle).
	HomesMax int
	HomeIdle time.Duration
	// PreviewAddr is where the preview server listens (default
	// 127.0.0.1:0, a free port; textslash's is 127.0.0.1:3002, a fixed
	// one for a tunnel or proxy); taken, Run fails saying so. PreviewURL
	// the links' URL with * where a link's id goes (default
	// http://*.preview.localhost:<PreviewAddr's port>);
	// PreviewTTL how long a link lasts (default preview.DefaultTTL).
	// Previews need homes with a network of their own.
	PreviewAddr string
	PreviewURL  string
	PreviewTTL  time.Duration
	// ChatURL is the web chat's URL where others reach it (PUBLIC_URL):
	// Validate refuses a PreviewURL on its name ("": not known).
	ChatURL string
	// ID names this runner among those sharing the jobs: each user's jobs
	// run on the runner holding their workspace (see affinity). It must
	// stay the same across restarts with the same Workspaces. Default:
	// DefaultID, the host name.
	ID string
}

// Defaults of the settings a zero Config leaves to the runner.
const (
	DefaultTimeout  = 300 * time.Second
	DefaultVoiceMax = 5 * time.Minute
)

// DefaultMemoryFree is the memory left free of total (MemoryTotal) when
// MemoryFree is 0: a tenth, between 256 MB and 2 GB.
func DefaultMemoryFree(total int64) int64 {
	return min(max(total/10, 256<<20), 2<<30)
}

// Default returns the configuration with every setting left zero set to
// its default. It never fails and never checks: a negative number is left
// for Validate to refuse. The Sandbox is copied, lists and all, so that
// neither Default nor New (which readies the copy) writes into the caller's.
func (c Config) Default() Config {
	if c.VoiceMax == 0 {
		c.VoiceMax = DefaultVoiceMax
	}
	if c.MemoryFree == 0 {
		c.MemoryFree = DefaultMemoryFree(memory.Total())
	}
	if c.HomeIdle == 0 {
		c.HomeIdle = sandbox.DefaultHomeIdle
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.PermissionTimeout == 0 {
		c.PermissionTimeout = contract.PermissionTimeout
	}
	if c.OutputCap == 0 {
		c.OutputCap = 10 << 20
	}
	if c.Workspaces == "" {
		c.Workspaces = "workspaces"
	}
	if c.Heartbeat == 0 {
		c.Heartbeat = time.Minute
	}
	if c.ShotAddr == "" {
		c.ShotAddr = "127.0.0.1:0"
	}
	if c.ID == "" {
		c.ID = DefaultID()
	}
	if c.ProjectMaxBytes == 0 {
		c.ProjectMaxBytes = DefaultProjectMaxBytes
	}
	if c.SnapshotMax == 0 {
		c.SnapshotMax = DefaultSnapshotMax
	}
	if c.Sandbox != nil {
		s := c.Sandbox.Clone()
		c.Sandbox = &s
	}
	return c
}

// maxTimeout is the longest Timeout: a run's own work must end within the
// dedup window, for the started mark to tell a job that ran from one that
// did not (a run that also waited for the person is told apart by
// markStarted's look-up).
const maxTimeout = contract.DedupWindow - time.Minute

// minHeartbeat is the shortest Heartbeat: runs look for progress every
// quarter of it, with a ticker, which wants more than nothing.
const minHeartbeat = 10 * time.Millisecond

// Validate checks the configuration as it will run (call it on Default's
// result): nil, or every setting refused, each a *contract.ConfigError.
// What needs the machine (the agent user, the workspaces, bubblewrap, the
// credentials, the agent's binary) New checks.
func (c Config) Validate() error {
	var errs []error
	if c.Concurrency < 0 {
		errs = append(errs, bad("Concurrency", c.Concurrency, "must be 0 (by memory) or more"))
	}
	if c.MemoryFree < 0 {
		errs = append(errs, bad("MemoryFree", c.MemoryFree, "must be 0 (a tenth of the memory) or more"))
	}
	if c.Timeout < time.Second || c.Timeout > maxTimeout {
		errs = append(errs, bad("Timeout", c.Timeout, fmt.Sprintf("must be between 1s and %dm", maxTimeout/time.Minute)))
	}
	if c.HomeIdle < time.Second {
		errs = append(errs, bad("HomeIdle", c.HomeIdle, "must be at least 1s"))
	}
	if c.PermissionTimeout < time.Second {
		errs = append(errs, bad("PermissionTimeout", c.PermissionTimeout, "must be at least 1s"))
	}
	if c.Heartbeat < minHeartbeat {
		errs = append(errs, bad("Heartbeat", c.Heartbeat, "must be at least "+minHeartbeat.String()))
	}
	if c.OutputCap < 1 {
		errs = append(errs, bad("OutputCap", c.OutputCap, "must be at least 1"))
	}
	if c.VoiceMax <= 0 {
		errs = append(errs, bad("VoiceMax", c.VoiceMax, "must be positive"))
	}
	if c.ProjectMaxBytes <= 0 {
		errs = append(errs, bad("ProjectMaxBytes", c.ProjectMaxBytes, "must be positive"))
	}
	if c.SnapshotMax <= 0 {
		errs = append(errs, bad("SnapshotMax", c.SnapshotMax, "must be positive"))
	}
	if c.DiskQuota != 0 && c.DiskQuota < disk.MinQuota {
		errs = append(errs, bad("DiskQuota", c.DiskQuota, fmt.Sprintf("must be 0 (no bound) or at least %dM", disk.MinQuota>>20)))
	}
	for _, d := range []struct {
		setting string
		value   time.Duration
	}{{"StopGrace", c.StopGrace}, {"IdleExit", c.IdleExit}, {"VoiceGrace", c.VoiceGrace}} {
		if d.value < 0 {
			errs = append(errs, bad(d.setting, d.value, "must not be negative"))
		}
	}
	if c.PreviewURL != "" {
		if err := preview.CheckURL(c.PreviewURL, c.ChatURL); err != nil {
			e := bad("PreviewURL", c.PreviewURL, "not a preview links' URL")
			e.Err = err
			errs = append(errs, e)
		}
	}
	if c.PreviewTTL < 0 {
		errs = append(errs, bad("PreviewTTL", c.PreviewTTL, "must not be negative"))
	}
	if !validID(c.ID) {
		errs = append(errs, bad("ID", c.ID, "want letters, digits, - and _ only"))
	}
	if c.Sandbox != nil {
		errs = append(errs, c.Sandbox.Validate()...)
	}
	return errors.Join(errs...)
}

// bad is the runner's refusal of setting (its field path in Config);
// value is nil for secrets and for settings left empty.
func bad(setting string, value any, reason string) *contract.ConfigError {
	return contract.BadSetting(service, setting, value, reason)
}
