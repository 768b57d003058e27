package runner

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/disk"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/home"
	"github.com/textslash/textslash/runner/memory"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/workspace"
)

// Runner takes jobs from JOBS and runs them.
type Runner struct {
	ready chan struct{} // closed once Run is ready (Ready)
	cfg   Config
	js    jetstream.JetStream
	log   zerolog.Logger
	agent agent.Agent
	// claudeBin is the Claude Code binary found, picked or not.
	claudeBin string
	user      *sandbox.User
	users     jetstream.KeyValue // the dispatcher's state, read to skip cancelled jobs
	events    jetstream.Stream
	media     *handover.Store    // where what runs hand over is stored
	shots     *handover.Endpoint // the screenshot endpoint, while Run runs
	bin       string             // the directory of the agents' textslash command, or ""
	// limited: runs get a cgroup with the sandbox's limits.
	limited bool
	// mem starts runs by memory; nil with a fixed Concurrency.
	mem *memory.Gate
	// conf is what of a person's sandbox this runner has.
	conf sandbox.Confinement
	// homes keeps people's sandboxes between runs, and what goes with
	// each; nil: each run has a sandbox of its own.
	homes *home.Keeper
	// ws are the people's workspaces: projects, worktrees, snapshots.
	ws    *workspace.Workspaces
	creds *sandbox.Credentials // people's git credentials; nil: none handed out
	// disks bound each person's disk; nil: not bounded.
	disks *disk.Disks

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
