package netns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// HostAddrs are this machine's own addresses as they are now, link-local
// ones (169.254.0.0/16, fe80::/10) included, but for loopback's (inside a
// namespace, 127.0.0.1 and ::1 are its own): a home reaches them through
// slirp4netns as any other machine would (the web chat or NATS bound
// beyond loopback) unless Options.RefuseHost.
func HostAddrs() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("host's addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipn.IP)
		if !ok || ip.Unmap().IsLoopback() {
			continue
		}
		ip = ip.Unmap()
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

// refuseHost adds a prohibit route for each of the host's addresses now
// that the namespace does not refuse yet. Attach calls it once the host
// is watched, and the watch again at each change of the host's addresses.
func (n *Net) refuseHost() error {
	addrs, err := HostAddrs()
	if err != nil {
		return err
	}
	n.refuseMu.Lock()
	defer n.refuseMu.Unlock()
	var todo []netip.Prefix
	var names []string
	for _, p := range addrs {
		if !n.refused[p] {
			todo = append(todo, p)
			names = append(names, p.Addr().String())
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := n.refuse(todo); err != nil {
		return err
	}
	later := len(n.refused) > 0
	for _, p := range todo {
		n.refused[p] = true
	}
	if later {
		n.log.Info().Strs("refused", names).Msg("netns: the host's new addresses refused")
	}
	return nil
}

// refuse adds a prohibit route for each prefix inside the namespace: a
// connection there fails at once (EACCES), and the person's programs,
// without CAP_NET_ADMIN in the namespace, cannot take the routes away. A
// route already there is left as it is.
func (n *Net) refuse(prefixes []netip.Prefix) error {
	if len(prefixes) == 0 {
		return nil
	}
	fd, err := n.sk.socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer unix.Close(fd)
	for i, p := range prefixes {
		if err := addProhibit(fd, uint32(i+1), p); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("prohibit route %s: %w", p, err)
		}
	}
	return nil
}

// addProhibit sends one RTM_NEWROUTE of type RTN_PROHIBIT for p on fd
// and reads the kernel's answer.
func addProhibit(fd int, seq uint32, p netip.Prefix) error {
	family, dst := unix.AF_INET, p.Addr().AsSlice()
	if p.Addr().Is6() {
		family = unix.AF_INET6
	}
	rt := unix.RtMsg{Family: uint8(family), Dst_len: uint8(p.Bits()), Table: unix.RT_TABLE_MAIN,
		Protocol: unix.RTPROT_STATIC, Scope: unix.RT_SCOPE_UNIVERSE, Type: unix.RTN_PROHIBIT}
	attr := make([]byte, unix.SizeofRtAttr+len(dst))
	binary.NativeEndian.PutUint16(attr[0:], uint16(len(attr)))
	binary.NativeEndian.PutUint16(attr[2:], unix.RTA_DST)
	copy(attr[unix.SizeofRtAttr:], dst)
	msg := make([]byte, unix.SizeofNlMsghdr+unix.SizeofRtMsg, unix.SizeofNlMsghdr+unix.SizeofRtMsg+len(attr))
	binary.NativeEndian.PutUint32(msg[0:], uint32(cap(msg)))
	binary.NativeEndian.PutUint16(msg[4:], unix.RTM_NEWROUTE)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	binary.NativeEndian.PutUint32(msg[8:], seq)
	r := msg[unix.SizeofNlMsghdr:]
	r[0], r[1], r[2], r[3] = rt.Family, rt.Dst_len, rt.Src_len, rt.Tos
	r[4], r[5], r[6], r[7] = rt.Table, rt.Protocol, rt.Scope, rt.Type
	binary.NativeEndian.PutUint32(r[8:], rt.Flags)
	msg = append(msg, attr...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	nr, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:nr])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4 {
			if errno := int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
				return unix.Errno(-errno)
			}
		}
	}
	return nil
}
