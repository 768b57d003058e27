package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/runner/child"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// RunNet is a network of its own for the programs of a run that is not in
// a home (a clone, an answer to an approval request: git, and the hooks
// and filters of the person's repository it runs), networked as the homes
// are: outbound connections through slirp4netns (a remote to clone from
// or push to, the GitHub API), the host's loopback unreachable but for
// the homes' forwards, the host's own addresses refused. Each program of
// the run still has a sandbox of its own (Confined); nsenter, as root,
// puts it in this network first (see Sandbox.InNet).
//
// Why a network per run and not per program: bubblewrap can make a
// network namespace but not join one, and a namespace of its own per
// program would cost slirp4netns's start each time; a run's git commands
// are many, its namespace and slirp4netns one.
type RunNet struct {
	holder  *child.Process // bubblewrap (endHeld ends it)
	pid     int            // the process holding the namespace
	ns      *entry         // its network namespace
	net     *netns.Net
	resolv  string
	nsenter string
}

// RunNet is a network for one run's programs, nil when homes share the
// host's network (a run not in a home then shares it too). Close it when
// the run ends.
func (hs *Homes) RunNet(log zerolog.Logger) (*RunNet, error) {
	hs.mu.Lock()
	cfg, err := hs.net()
	hs.mu.Unlock()
	if err != nil || cfg == nil {
		return nil, err
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("%w: nsenter not found (util-linux)", ErrNoHome)
	}
	n := &RunNet{resolv: cfg.resolv, nsenter: nsenter}
	if err := n.startHolder(); err != nil {
		n.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), homeReady)
	defer cancel()
	if n.net, err = netns.Attach(log.WithContext(ctx), n.pid, cfg.o); err != nil {
		n.Close()
		return nil, fmt.Errorf("run's network: %w", err)
	}
	return n, nil
}

// startHolder starts bubblewrap with a network namespace of its own (it
// brings the loopback up) and nothing else, running a shell that waits
// on its stdin (startHeld), and reads its pid.
func (n *RunNet) startHolder() error {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		return fmt.Errorf("%w: bubblewrap not found", ErrNoSandbox)
	}
	// --dev: an unprivileged bubblewrap mounting a /dev maps its user to
	// root of an outer user namespace, which owns the network namespace,
	// and runs the holder in an inner one, as a home's (enter.go): a runner
	// that is not root needs that root to network it (netns). As root,
	// bubblewrap makes no user namespace here, and --dev changes nothing.
	cmd := exec.Command(bwrap, "--unshare-net", "--die-with-parent", "--info-fd", "3",
		"--ro-bind", "/", "/", "--dev", "/dev", "--", "/bin/sh", "-c", "echo; read _")
	if n.holder, n.pid, err = startHeld(cmd); err != nil {
		return fmt.Errorf("run's network: %w", err)
	}
	// Entered by these files, never by pid (another process's soon
	// after). As root, bubblewrap makes no user namespace here; without
	// root, it nests two, as a home's (enter.go).
	names := []string{"net"}
	if os.Geteuid() != 0 {
		names = []string{"user", "net"}
	}
	if n.ns, err = openEntry(n.pid, names...); err != nil {
		return err
	}
	return nil
}

// InNet is s for programs in network n (nil: s as it is): each joins n
// before its sandbox is made, and reads n's resolver.
func (s *Sandbox) InNet(n *RunNet) *Sandbox {
	if n == nil {
		return s
	}
	c := *s
	c.net, c.offline = n, false
	return &c
}

// Offline is s for programs that need no network (the runner's own git
// in a person's repository): a network namespace of their own, with a
// loopback alone.
func (s *Sandbox) Offline() *Sandbox {
	c := *s
	c.net, c.offline = nil, true
	return &c
}

// enter is the command line running path argv in n, as cmd's credential
// (none: as the caller).
func (n *RunNet) enter(cmd *exec.Cmd, path string, argv []string) (string, []string) {
	return n.ns.wrap(cmd, n.nsenter, "", path, argv)
}

// Close takes the network down: slirp4netns, the forwards, the holder
// and bubblewrap (endHeld).
func (n *RunNet) Close() {
	if n.net != nil {
		_ = n.net.Close()
	}
	if n.holder != nil {
		endHeld(n.holder, n.ns)
	}
	if n.ns != nil {
		n.ns.close()
	}
}
