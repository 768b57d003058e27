package netns

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// An address the host takes after a home was networked (a VPN coming up,
// docker0, a new DHCP lease) is refused in that home too, once the
// prohibit route for it is in.
func TestRefuseHostAddressAddedLater(t *testing.T) {
	needRoot(t)
	pid := startHome(t)
	attach(t, pid, Options{RefuseHost: true})
	const ip = "10.254.42.1"
	hostAddr(t, ip)
	addr := serve(t, net.JoinHostPort(ip, "0"), "late")
	if !reaches(t, os.Getpid(), addr) {
		t.Fatalf("the probe cannot reach %s even from the host: it proves nothing", addr)
	}
	waitProhibit(t, pid, ip)
	if reaches(t, pid, addr) {
		t.Errorf("from the home, %s (the host's, added after the home was made) answered; want it refused", addr)
	}
}

// The host's link-local addresses (169.254.0.0/16) are its own as much as
// any: a home made while the host has one cannot reach it.
func TestRefuseHostLinkLocal(t *testing.T) {
	needRoot(t)
	const ip = "169.254.77.42"
	hostAddr(t, ip)
	addr := serve(t, net.JoinHostPort(ip, "0"), "link-local")
	if !reaches(t, os.Getpid(), addr) {
		t.Fatalf("the probe cannot reach %s even from the host: it proves nothing", addr)
	}
	pid := startHome(t)
	attach(t, pid, Options{RefuseHost: true})
	if reaches(t, pid, addr) {
		t.Errorf("from the home, the host's link-local %s answered; want it refused", addr)
	}
}

// hostAddr gives the host ip (on its loopback interface: this kernel may
// have no dummy interfaces) until the test ends.
func hostAddr(t *testing.T, ip string) {
	t.Helper()
	if out, err := exec.Command("ip", "addr", "add", ip+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add %s: %v: %s", ip, err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "addr", "del", ip+"/32", "dev", "lo").Run() })
}

// waitProhibit waits until pid's namespace has a prohibit route for ip.
func waitProhibit(t *testing.T, pid int, ip string) {
	t.Helper()
	var out string
	start := time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out, _ = inNamespace(pid, "ip", "route", "show", "table", "main", ip+"/32")
		if strings.HasPrefix(out, "prohibit ") {
			t.Logf("prohibit route for %s in the home after %v", ip, time.Since(start))
			return
		}
	}
	t.Fatalf("no prohibit route for %s in the home after 10 s: %q", ip, out)
}

// The watch of the host's addresses lives as long as a network refusing
// them: the last one closed ends it.
func TestHostWatchEndsWithLastNetwork(t *testing.T) {
	needRoot(t)
	a := attach(t, startHome(t), Options{RefuseHost: true})
	b := attach(t, startHome(t), Options{RefuseHost: true})
	a.Close()
	if watching() == 0 {
		t.Fatal("no watch of the host's addresses with one network refusing them left")
	}
	b.Close()
	if n := watching(); n != 0 {
		t.Errorf("the watch still holds %d networks after the last closed; want it ended", n)
	}
}

// watching is how many networks the watch holds, 0 when its subscription
// is closed too.
func watching() int {
	hostAddrs.mu.Lock()
	defer hostAddrs.mu.Unlock()
	if hostAddrs.sub == nil {
		return 0
	}
	return max(len(hostAddrs.nets), 1)
}
