package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ownNetEnv marks a test binary started by apart, in a network
// namespace of its own.
const ownNetEnv = "TEXTSLASH_TEST_OWN_NETWORK"

// TestMain fails the package when its tests gave the host's loopback an
// address: other packages' tests run beside these (scripts/test), and a
// browser may abort a page load under way when the machine's addresses
// change (Chromium's net::ERR_NETWORK_CHANGED, which Docker's interfaces
// coming and going cause on real hosts). Tests that change addresses do
// it apart.
func TestMain(m *testing.M) {
	if os.Getenv(ownNetEnv) != "" || os.Geteuid() != 0 {
		os.Exit(m.Run())
	}
	stop, err := watchLoopback()
	if err != nil {
		fmt.Fprintln(os.Stderr, "netns tests: cannot watch the host's addresses:", err)
		os.Exit(1)
	}
	code := m.Run()
	if added := stop(); len(added) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "netns tests: the host's loopback was given %v; change addresses in a network of the test's own (apart)\n", added)
		code = 1
	}
	os.Exit(code)
}

// watchLoopback watches the addresses added to this network namespace's
// loopback from now on; stop ends the watch and lists them.
func watchLoopback() (stop func() []string, err error) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return nil, err
	}
	sub, err := subscribeAddrs()
	if err != nil {
		return nil, err
	}
	var added []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		for {
			k, err := sub.Read(buf)
			if err != nil && !errors.Is(err, unix.ENOBUFS) {
				return // the deadline stop set, or the socket closed
			}
			msgs, _ := syscall.ParseNetlinkMessage(buf[:max(k, 0)])
			for _, msg := range msgs {
				if msg.Header.Type == syscall.RTM_NEWADDR && len(msg.Data) >= syscall.SizeofIfAddrmsg &&
					int((*syscall.IfAddrmsg)(unsafe.Pointer(&msg.Data[0])).Index) == lo.Index {
					added = append(added, addrOf(msg))
				}
			}
		}
	}()
	return func() []string {
		// The last changes may still be in the socket: read them first.
		_ = sub.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		<-done
		sub.Close()
		return added
	}, nil
}

// addrOf is the address an RTM_NEWADDR message adds.
func addrOf(msg syscall.NetlinkMessage) string {
	attrs, _ := syscall.ParseNetlinkRouteAttr(&msg)
	for _, a := range attrs {
		if a.Attr.Type == syscall.IFA_LOCAL || a.Attr.Type == syscall.IFA_ADDRESS {
			return net.IP(a.Value).String()
		}
	}
	return "?"
}

// apart runs the calling test again in a child of this test binary with a
// network namespace of its own (its loopback up, nothing else), and
// reports true once it has: the caller returns. In that child it reports
// false: the test runs there, and what it does to "the host's" addresses
// stays in that namespace. The homes' networks refuse the addresses of the
// namespace the runner is in, whichever it is.
func apart(t *testing.T) bool {
	t.Helper()
	if os.Getenv(ownNetEnv) != "" {
		if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set lo up: %v: %s", err, out)
		}
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), ownNetEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	t.Log(string(out))
	if err != nil {
		t.Fatalf("%s in a network of its own: %v", t.Name(), err)
	}
	if !regexp.MustCompile(`(?m)^--- PASS: ` + regexp.QuoteMeta(t.Name()) + ` `).Match(out) {
		t.Fatalf("%s did not pass in a network of its own", t.Name())
	}
	return true
}

// An address the host takes after a home was networked (a VPN coming up,
// docker0, a new DHCP lease) is refused in that home too, once the
// prohibit route for it is in.
func TestRefuseHostAddressAddedLater(t *testing.T) {
	needRoot(t)
	if apart(t) {
		return
	}
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
	if apart(t) {
		return
	}
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
// have no dummy interfaces) until the test ends; only in a test run apart.
func hostAddr(t *testing.T, ip string) {
	t.Helper()
	if os.Getenv(ownNetEnv) == "" {
		t.Fatal("hostAddr outside a network of the test's own: call apart first")
	}
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
