package netns

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// The host's addresses change while homes live: a VPN comes up, docker
// makes docker0, DHCP hands out another lease. The networks that refuse
// them (Options.RefuseHost) are told by the kernel: one netlink socket
// subscribed to address changes, open while any such network lives, and at
// each change every one of them refuses the addresses it does not yet. A
// subscription rather than a re-read every few seconds: the kernel tells
// us at once, so there is no window in which a new address is reachable,
// and nothing runs while the addresses stay as they are.
//
// A network is watched before it reads the host's addresses the first
// time (Attach), so an address added in between is refused by the watch.
// Routes for addresses the host no longer has stay: they refuse an address
// that may be another machine's now, which is the safer side to err on.

// hostAddrs watches the host's addresses for the networks refusing them.
var hostAddrs = &hostWatch{nets: map[*Net]bool{}}

type hostWatch struct {
	mu   sync.Mutex // held while networks are brought up to date
	nets map[*Net]bool
	sub  *os.File // the subscription; nil when no network is watched
}

// add watches the host's addresses for n from now on.
func (w *hostWatch) add(n *Net) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sub == nil {
		sub, err := subscribeAddrs()
		if err != nil {
			return err
		}
		w.sub = sub
		go w.run(sub)
	}
	w.nets[n] = true
	return nil
}

// remove stops watching for n; once it returns, the watch no longer
// touches n. The last network removed closes the subscription.
func (w *hostWatch) remove(n *Net) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.nets[n] {
		return
	}
	delete(w.nets, n)
	if len(w.nets) == 0 {
		w.sub.Close()
		w.sub = nil
	}
}

// run brings the networks up to date at each message on sub until sub is
// closed. ENOBUFS (the kernel dropped messages) re-reads the host's
// addresses all the same; any other error ends the watch, and with it the
// networks that relied on it.
func (w *hostWatch) run(sub *os.File) {
	buf := make([]byte, 64<<10)
	for {
		_, err := sub.Read(buf)
		switch {
		case errors.Is(err, os.ErrClosed):
			return
		case err != nil && !errors.Is(err, unix.ENOBUFS):
			w.fail(sub, err)
			return
		}
		w.update()
	}
}

// fail closes the networks watched by sub, which cannot tell of changes
// any more.
func (w *hostWatch) fail(sub *os.File, err error) {
	w.mu.Lock()
	var all []*Net
	if w.sub == sub {
		for n := range w.nets {
			n.log.Error().Err(err).Msg("netns: the host's addresses cannot be watched; closing the network")
			all = append(all, n)
		}
	}
	w.mu.Unlock()
	for _, n := range all {
		n.Close()
	}
}

// update has every watched network refuse the host's addresses as they
// are now. A network that cannot is closed: a home without a way out is
// better than one reaching the host.
func (w *hostWatch) update() {
	w.mu.Lock()
	var failed []*Net
	for n := range w.nets {
		if err := n.refuseHost(); err != nil {
			n.log.Error().Err(err).Msg("netns: the host's new addresses cannot be refused; closing the network")
			failed = append(failed, n)
		}
	}
	w.mu.Unlock()
	for _, n := range failed {
		n.Close()
	}
}

// subscribeAddrs opens a netlink socket told of every IPv4 and IPv6
// address added to or removed from the host, read through the runtime's
// poller so that closing it ends a read.
func subscribeAddrs() (*os.File, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("watch host's addresses: netlink: %w", err)
	}
	sa := &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch host's addresses: bind netlink: %w", err)
	}
	return os.NewFile(uintptr(fd), "netlink-ifaddr"), nil
}
