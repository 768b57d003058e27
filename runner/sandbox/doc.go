// Package sandbox confines the programs of a run: bubblewrap (Sandbox),
// limits of memory, processes and CPU through a cgroup of the run's own
// (Limits, Cgroup), the processes themselves (the agent user they run as,
// their environment, ending all they started, their capped output), the
// homes kept per person (Home, Homes) and the network a run gets when it
// is not in one (RunNet; Sandbox.Offline for the runner's own git), file
// access beneath a directory that never follows a link out of it
// (ReadBeneath and the others), and people's git credentials handed to
// their own runs only (Credentials).
//
// It knows nothing of the runner that uses it; a Sandbox is set as the
// runner's Config.Sandbox, which is why its refusals of settings name
// their paths there (Sandbox.Limits.Pids).
package sandbox

// service and configPath name the settings this package refuses: a
// Sandbox is the runner's Config.Sandbox, and the binary maps those paths
// to its variables.
const (
	service    = "runner"
	configPath = "Sandbox"
)
