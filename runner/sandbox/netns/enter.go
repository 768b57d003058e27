package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// dialTimeout bounds a Dial whose ctx has no deadline.
const dialTimeout = 30 * time.Second

// inside runs fn with its OS thread in the namespace and returns once fn
// has. Sockets fn creates stay in the namespace for their whole life. fn
// runs on a goroutine of its own, locked to its thread: if the thread cannot
// return to the host's namespace, it stays locked and ends with that
// goroutine, so no other goroutine ever runs in the namespace by accident.
func (n *Net) inside(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		host, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer host.Close()
		if err := unix.Setns(int(n.ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter network namespace of pid %d: %w", n.pid, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); err != nil {
			n.log.Error().Err(err).Msg("netns: thread could not leave the namespace; it ends with its goroutine")
			errc <- errors.Join(ferr, fmt.Errorf("leave network namespace of pid %d: %w", n.pid, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

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

// dialIP connects to an address (no name) from inside the namespace.
func (n *Net) dialIP(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.inside(func() error {
		var err error
		d := net.Dialer{FallbackDelay: -1}
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	if err != nil && c != nil {
		c.Close()
		c = nil
	}
	return c, err
}

// dialDNS is the namespace resolver's way to its server: whichever server
// the host's resolv.conf names, the namespace's is slirp4netns's forwarder.
func (n *Net) dialDNS(ctx context.Context, network, _ string) (net.Conn, error) {
	return n.dialIP(ctx, network, net.JoinHostPort(DNS, "53"))
}

// listen opens a TCP listener inside the namespace.
func (n *Net) listen(addr string) (net.Listener, error) {
	var l net.Listener
	err := n.inside(func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil && l != nil {
		l.Close()
		l = nil
	}
	return l, err
}

// loopbackPoll is how often Attach looks whether the namespace's loopback
// is up yet.
const loopbackPoll = 2 * time.Millisecond

// waitLoopback waits until the namespace's loopback is up (its sandbox has
// set it up) or ctx ends.
func (n *Net) waitLoopback(ctx context.Context) error {
	for {
		var up bool
		err := n.inside(func() error {
			lo, err := net.InterfaceByName("lo")
			up = err == nil && lo.Flags&net.FlagUp != 0
			return err
		})
		if err != nil {
			return fmt.Errorf("loopback of pid %d: %w", n.pid, err)
		}
		if up {
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
