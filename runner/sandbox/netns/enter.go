package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// dialTimeout bounds a Dial whose ctx has no deadline.
const dialTimeout = 30 * time.Second

// Dial connects from inside the namespace, as a program there would: to
// "127.0.0.1:3000" is to the namespace's own loopback (the person's dev
// server), not the host's. Names are resolved by the host's /etc/hosts and
// the namespace's DNS (so "localhost" is the namespace's loopback).
// network is "tcp", "tcp4", "tcp6", "udp", "udp4" or "udp6".
func (n *Net) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if n.isClosed() {
		return nil, ErrClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, dialTimeout)
		defer cancel()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s in namespace: %w", addr, err)
	}
	ips, err := n.lookup(ctx, network, host)
	if err != nil {
		return nil, fmt.Errorf("dial %s in namespace: %w", addr, err)
	}
	var errs []error
	for _, ip := range ips {
		c, err := n.dialIP(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("dial %s in namespace of pid %d: %w", addr, n.pid, errors.Join(errs...))
}

// lookup resolves host to addresses: an address as is, a name through the
// host's /etc/hosts, then the namespace's DNS.
func (n *Net) lookup(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	family := "ip"
	switch network {
	case "tcp4", "udp4":
		family = "ip4"
	case "tcp6", "udp6":
		family = "ip6"
	}
	ips, err := n.dns.LookupNetIP(ctx, family, host)
	if err != nil {
		return nil, err
	}
	// IPv4 first: the namespace has no IPv6 route out, and a local server
	// listening on 127.0.0.1 only is the common case.
	v4 := make([]netip.Addr, 0, len(ips))
	var v6 []netip.Addr
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			v4 = append(v4, ip.Unmap())
		} else {
			v6 = append(v6, ip)
		}
	}
	return append(v4, v6...), nil
}

// dialIP connects to an address (no name) from inside the namespace: a
// socket made there, connected here.
func (n *Net) dialIP(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, err
	}
	typ := unix.SOCK_STREAM
	if strings.HasPrefix(network, "udp") {
		typ = unix.SOCK_DGRAM
	} else if !strings.HasPrefix(network, "tcp") {
		return nil, fmt.Errorf("dial %s: network %q: %w", addr, network, net.UnknownNetworkError(network))
	}
	family, sa := sockaddr(ap)
	fd, err := n.sk.socket(family, typ|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("socket in namespace of pid %d: %w", n.pid, err)
	}
	if err := connect(ctx, fd, sa); err != nil {
		unix.Close(fd)
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect "+addr, err)}
	}
	return fileConn(fd, network)
}

// connect connects the non-blocking socket fd to sa, waiting until it is
// connected, refused, or ctx ends.
func connect(ctx context.Context, fd int, sa unix.Sockaddr) error {
	err := unix.Connect(fd, sa)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EINPROGRESS) && !errors.Is(err, unix.EINTR) {
		return err
	}
	for {
		wait := 50 * time.Millisecond // ctx's end is seen within this
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			wait = max(time.Until(dl), time.Millisecond)
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		ready, err := unix.Poll(fds, int(wait.Milliseconds()))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if ready > 0 {
			soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
			if err != nil {
				return err
			}
			if soerr != 0 {
				return unix.Errno(soerr)
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// fileConn is the connected socket fd as a net.Conn (fd is its now).
func fileConn(fd int, name string) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close() // FileConn holds a copy
	return net.FileConn(f)
}

// sockaddr is ap as the kernel takes it, with its address family.
func sockaddr(ap netip.AddrPort) (int, unix.Sockaddr) {
	if a := ap.Addr().Unmap(); a.Is4() {
		return unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}
	}
	return unix.AF_INET6, &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

// dialDNS is the namespace resolver's way to its server: whichever server
// the host's resolv.conf names, the namespace's is slirp4netns's forwarder.
func (n *Net) dialDNS(ctx context.Context, network, _ string) (net.Conn, error) {
	return n.dialIP(ctx, network, net.JoinHostPort(DNS, "53"))
}

// listen opens a TCP listener inside the namespace at addr (ip:port).
func (n *Net) listen(addr string) (net.Listener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, err
	}
	family, sa := sockaddr(ap)
	fd, err := n.sk.socket(family, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, fmt.Errorf("socket in namespace of pid %d: %w", n.pid, err)
	}
	f := os.NewFile(uintptr(fd), "listen "+addr)
	defer f.Close() // FileListener holds a copy
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return nil, os.NewSyscallError("setsockopt", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, &net.OpError{Op: "listen", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: os.NewSyscallError("bind", err)}
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		return nil, os.NewSyscallError("listen", err)
	}
	return net.FileListener(f)
}

// loopbackPoll is how often Attach looks whether the namespace's loopback
// is up yet.
const loopbackPoll = 2 * time.Millisecond

// waitLoopback waits until the namespace's loopback is up (its sandbox has
// set it up) or ctx ends.
func (n *Net) waitLoopback(ctx context.Context) error {
	fd, err := n.sk.socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return fmt.Errorf("loopback of pid %d: %w", n.pid, err)
	}
	defer unix.Close(fd)
	for {
		ifr, err := unix.NewIfreq("lo")
		if err == nil {
			err = unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr)
		}
		if err != nil {
			return fmt.Errorf("loopback of pid %d: %w", n.pid, err)
		}
		if ifr.Uint16()&unix.IFF_UP != 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("loopback of pid %d never came up: %w", n.pid, ctx.Err())
		case <-time.After(loopbackPoll):
		}
	}
}

func (n *Net) isClosed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.closed
}
