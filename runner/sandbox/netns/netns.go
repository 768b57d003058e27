package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// The user-mode network slirp4netns gives the namespace (its defaults for
// --cidr=10.0.2.0/24).
const (
	// DNS is the address of slirp4netns's DNS forwarder, the nameserver a
	// home's resolv.conf names.
	DNS = "10.0.2.3"
	// Gateway is the namespace's default route; with
	// --disable-host-loopback it refuses what slirp4netns would hand to the
	// host's 127.0.0.1.
	Gateway = "10.0.2.2"
	// Address is the namespace's own address on its interface.
	Address = "10.0.2.100"
	// Interface is the name of the namespace's interface.
	Interface = "tap0"
	// mtu: slirp4netns's largest, several times the throughput of 1500.
	mtu = 65520
)

// Options says how to network a namespace.
type Options struct {
	// Slirp is the slirp4netns binary; "" looks for slirp4netns in PATH.
	Slirp string
	// Forward are host loopback addresses ("127.0.0.1:PORT") reachable
	// inside the namespace at the same address: the model API behind a
	// loopback gateway, textslash's screenshot endpoint.
	Forward []string
	// RefuseHost: nothing in the namespace may reach the host's own
	// addresses (HostAddrs), which slirp4netns would otherwise carry to as
	// to any machine's: those the host has when Attach is called, and
	// those it takes while the network lives.
	RefuseHost bool
}

func (o Options) binary() (string, error) {
	name := o.Slirp
	if name == "" {
		name = "slirp4netns"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found (install Debian's slirp4netns): %v", ErrUnavailable, name, err)
	}
	return path, nil
}

func (o Options) forwards() ([]netip.AddrPort, error) {
	out := make([]netip.AddrPort, 0, len(o.Forward))
	for _, s := range o.Forward {
		ap, err := netip.ParseAddrPort(s)
		if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
			return nil, fmt.Errorf("%w: %q", ErrForward, s)
		}
		out = append(out, ap)
	}
	return out, nil
}

// Net is a namespace's network: slirp4netns serving it, the forwards into
// it, and the proxy reaching into it. Close ends them all.
type Net struct {
	pid   int
	ns    *os.File // /proc/PID/ns/net, held so the namespace cannot be swapped under us
	sk    sockets  // how sockets are made in it
	slirp *slirp
	log   zerolog.Logger
	dns   *net.Resolver
	conns *conns // forwarded and proxied connections, closed by Close

	refuseMu sync.Mutex
	refused  map[netip.Prefix]bool // the prohibit routes in the namespace

	mu        sync.Mutex
	closed    bool
	listeners []net.Listener
	proxy     *proxy
	wg        sync.WaitGroup // accept loops and the proxy's server
}

// Attach gives the network namespace of process pid an interface, a default
// route and DNS through slirp4netns, and opens Options.Forward inside it. It
// returns once the namespace is configured: outbound TCP and UDP work, and
// the host's loopback (through 10.0.2.2 or any other way) is unreachable
// except the forwarded addresses. It refuses a pid in this process's own
// namespace (ErrHostNamespace). ctx bounds the start only; the network
// lives until Close.
//
// The namespace's loopback must come up first, and Attach waits for it:
// bubblewrap reports its child's pid (--info-fd) before it brings up the
// new namespace's loopback, and slirp4netns configuring the namespace at
// the same moment makes bubblewrap die ("loopback: Failed RTM_NEWADDR").
// A namespace nobody brings the loopback up in (unshare --net) waits until
// ctx ends: bring it up before Attach.
func Attach(ctx context.Context, pid int, o Options) (*Net, error) {
	log := *zerolog.Ctx(ctx)
	bin, err := o.binary()
	if err != nil {
		return nil, err
	}
	fwd, err := o.forwards()
	if err != nil {
		return nil, err
	}
	log = log.With().Int("netns_pid", pid).Logger()
	ns, err := openNamespace(pid)
	if err != nil {
		return nil, err
	}
	n := &Net{pid: pid, ns: ns, log: log, conns: newConns(), refused: map[netip.Prefix]bool{}}
	n.dns = &net.Resolver{PreferGo: true, Dial: n.dialDNS}
	start := time.Now()
	// Without root, the namespace is reached through the helper, which
	// slirp4netns joins too (see sockets.go).
	helper := 0
	if privileged() {
		n.sk = setnsSockets{ns: ns}
	} else {
		owner, err := ownerOf(ns)
		if err != nil {
			ns.Close()
			return nil, err
		}
		h, err := startHelper(owner, ns)
		owner.Close()
		if err != nil {
			ns.Close()
			return nil, err
		}
		n.sk, helper = h, h.cmd.Process.Pid
	}
	if err := n.waitLoopback(ctx); err != nil {
		n.sk.close()
		ns.Close()
		return nil, err
	}
	n.slirp, err = startSlirp(log.WithContext(ctx), bin, ns, helper)
	if err != nil {
		n.sk.close()
		ns.Close()
		return nil, err
	}
	for _, ap := range fwd {
		if err := n.forward(ap); err != nil {
			n.Close()
			return nil, err
		}
	}
	if o.RefuseHost {
		if err := hostAddrs.add(n); err != nil {
			n.Close()
			return nil, err
		}
		if err := n.refuseHost(); err != nil {
			n.Close()
			return nil, err
		}
	}
	log.Info().Str("slirp_bin", bin).Int("slirp_pid", n.slirp.p.Pid).
		Strs("forward", o.Forward).Int64("duration_ms", time.Since(start).Milliseconds()).
		Int64("slirp_ready_ms", n.slirp.startup.Milliseconds()).
		Msg("netns: namespace networked")
	return n, nil
}

// openNamespace opens pid's network namespace and refuses this process's
// own: slirp4netns would configure the host.
func openNamespace(pid int) (*os.File, error) {
	path := fmt.Sprintf("/proc/%d/ns/net", pid)
	ns, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open network namespace of pid %d: %w", pid, err)
	}
	var theirs, ours unix.Stat_t
	if err := unix.Fstat(int(ns.Fd()), &theirs); err != nil {
		ns.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := unix.Stat("/proc/self/ns/net", &ours); err != nil {
		ns.Close()
		return nil, fmt.Errorf("stat own network namespace: %w", err)
	}
	if theirs.Ino == ours.Ino && theirs.Dev == ours.Dev {
		ns.Close()
		return nil, fmt.Errorf("pid %d: %w", pid, ErrHostNamespace)
	}
	return ns, nil
}

// ownerOf opens the user namespace owning the namespace ns.
func ownerOf(ns *os.File) (*os.File, error) {
	fd, err := unix.IoctlRetInt(int(ns.Fd()), unix.NS_GET_USERNS)
	if err != nil {
		return nil, fmt.Errorf("the user namespace owning %s: %w", ns.Name(), err)
	}
	return os.NewFile(uintptr(fd), "userns"), nil
}

// Done is closed once slirp4netns has exited: after Close, or when it died
// and the namespace lost its way out.
func (n *Net) Done() <-chan struct{} { return n.slirp.done }

// Close stops the proxy, the forwards and their connections, and
// slirp4netns, and waits for them. A second Close does nothing.
func (n *Net) Close() error {
	hostAddrs.remove(n)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	var errs []error
	for _, l := range n.listeners {
		errs = append(errs, ignoreClosed(l.Close()))
	}
	if n.proxy != nil {
		errs = append(errs, n.proxy.close())
	}
	n.mu.Unlock()
	n.conns.closeAll()
	n.wg.Wait()
	if n.slirp != nil {
		n.slirp.stop(n.log)
	}
	errs = append(errs, n.sk.close(), n.ns.Close())
	err := errors.Join(errs...)
	n.log.Info().Err(err).Msg("netns: network closed")
	return err
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// ResolvConf writes dir/resolv.conf naming the namespace's DNS forwarder,
// for the home to bind at /etc/resolv.conf, and returns its path.
func ResolvConf(dir string) (string, error) {
	path := filepath.Join(dir, "resolv.conf")
	body := "# The home's DNS: slirp4netns's forwarder (runner/sandbox/netns).\nnameserver " + DNS + "\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		return "", fmt.Errorf("write resolv.conf: %w", err)
	}
	return path, nil
}

// Probe says whether Attach can work here: the slirp4netns binary is
// there, and either this process may enter network namespaces itself
// (CAP_SYS_ADMIN, as root has) or nsenter is there and /dev/net/tun may be
// opened by its user (slirp4netns opens it inside the namespace, where
// root's files are nobody's: Debian makes it 0666). Its error wraps
// ErrUnavailable and says what is missing.
func Probe(o Options) error {
	if _, err := o.binary(); err != nil {
		return err
	}
	if privileged() {
		return nil
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return fmt.Errorf("%w: nsenter not found (install Debian's util-linux)", ErrUnavailable)
	}
	if err := unix.Access(tunDevice, unix.R_OK|unix.W_OK); err != nil {
		return fmt.Errorf("%w: uid %d may not open %s (%v): chmod 0666 it, as Debian does, or in a container give it the device (devices: [/dev/net/tun])", ErrUnavailable, os.Geteuid(), tunDevice, err)
	}
	return nil
}

// tunDevice is the device slirp4netns makes the namespace's interface with.
const tunDevice = "/dev/net/tun"
