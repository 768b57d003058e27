package sandbox

import (
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// serveHost is a TCP server on addr ("127.0.0.1:0", …) answering "host"
// to each connection; its address.
func serveHost(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("host\n"))
			c.Close()
		}
	}()
	return l.Addr().String()
}

// tcpScript reads what addr says, or says refused.
func tcpScript(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("(timeout 2 cat < /dev/tcp/%s/%s) 2>/dev/null || echo refused", host, port)
}

// firstIPv4 is one of this machine's own IPv4 addresses, "" when none.
func firstIPv4() string {
	addrs, _ := netns.HostAddrs()
	for _, p := range addrs {
		if p.Addr().Is4() && !p.Addr().IsLinkLocalUnicast() {
			return p.Addr().String()
		}
	}
	return ""
}

// A run's own sandbox put in a RunNet reaches out (here: a server on this
// machine's own address, which the test's options do not refuse, as any
// other machine), and the forwarded loopback address, as the agent user
// and with the homes' resolver; the host's other loopback servers are out
// of reach. An offline sandbox reaches nothing.
func TestRunNet(t *testing.T) {
	box := homeBox(t)
	if err := netns.Probe(netns.Options{}); err != nil {
		t.Skip(err)
	}
	ip := firstIPv4()
	if ip == "" {
		t.Skip("no IPv4 address of this machine's own but loopback")
	}
	private, forwarded := serveHost(t, "127.0.0.1:0"), serveHost(t, "127.0.0.1:0")
	outside := serveHost(t, net.JoinHostPort(ip, "0"))
	hs := &Homes{Network: &netns.Options{Forward: []string{forwarded}}, Dir: t.TempDir()}
	defer hs.Close()
	n, err := hs.RunNet(zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	// As root, runs drop to the agent user (nobody here); without root
	// they run as the runner's own.
	var u *User
	uid := os.Getuid()
	if uid == 0 {
		if u, err = LookupUser("nobody"); err != nil {
			t.Skip(err)
		}
		uid = int(u.UID)
	}
	ws, home := t.TempDir(), t.TempDir()
	if err := PrepareWorkspace(ws, home, u); err != nil {
		t.Fatal(err)
	}
	script := "id -u; cat /etc/resolv.conf | grep nameserver; bash -c '" + tcpScript(private) + "; " + tcpScript(forwarded) + "; " + tcpScript(outside) + "'"
	got := outputOf(t, Confined(CommandFunc(ws, home, u, false), box.InNet(n), ws, home, "", nil), script)
	if want := fmt.Sprintf("%d\nnameserver %s\nrefused\nhost\nhost", uid, netns.DNS); got != want {
		t.Errorf("in the run's network: %q; want %q", got, want)
	}
	got = outputOf(t, Confined(CommandFunc(ws, home, u, false), box.Offline(), ws, home, "", nil), "bash -c '"+tcpScript(forwarded)+"; "+tcpScript(outside)+"'")
	if want := "refused\nrefused"; got != want {
		t.Errorf("offline: %q; want %q", got, want)
	}
	if got := outputOf(t, Confined(CommandFunc(ws, home, u, false), box, ws, home, "", nil), "bash -c '"+tcpScript(private)+"'"); got != "host" {
		t.Errorf("a sandbox on the host's network: %q; want host (else this test proves nothing)", got)
	}
}

// Closed, a RunNet leaves no process behind: its holder, the process
// holding the namespace, and slirp4netns end.
func TestRunNetClosed(t *testing.T) {
	homeBox(t)
	if err := netns.Probe(netns.Options{}); err != nil {
		t.Skip(err)
	}
	hs := &Homes{Network: &netns.Options{}, Dir: t.TempDir()}
	n, err := hs.RunNet(zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	pids := []int{n.holder.Pid, n.pid}
	for _, pid := range pids {
		if !running(pid) {
			t.Fatalf("pid %d does not run before Close", pid)
		}
	}
	n.Close()
	for _, pid := range pids {
		if running(pid) {
			t.Errorf("pid %d still runs after Close", pid)
		}
	}
	select {
	case <-n.net.Done():
	default:
		t.Error("slirp4netns still runs after Close")
	}
}
