package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The host's loopback is out of reach from a home, by 127.0.0.1 and by
// slirp4netns's gateway alike. The same probe run in this process's own
// namespace reaches the server: were the home's namespace the host's (as
// with --share-net), the test would fail.
func TestHostLoopbackUnreachable(t *testing.T) {
	needNamespaces(t)
	secret := serve(t, "127.0.0.1:0", "secret")
	_, port, _ := net.SplitHostPort(secret)
	if !reaches(t, os.Getpid(), secret) {
		t.Fatalf("the probe cannot reach %s even from the host: it proves nothing", secret)
	}
	pid := startHome(t)
	attach(t, pid, Options{})
	for _, addr := range []string{secret, net.JoinHostPort(Gateway, port)} {
		if reaches(t, pid, addr) {
			t.Errorf("from the home, %s (the host's 127.0.0.1:%s) answered; want unreachable", addr, port)
		}
	}
}

// Outbound connections work: a server on the machine's own eth0 address is
// reached from the home as any other machine's would be.
func TestOutboundToHostAddress(t *testing.T) {
	needNamespaces(t)
	ip := hostAddress()
	if ip == "" {
		t.Skip("no non-loopback IPv4 address on this machine")
	}
	addr := serve(t, net.JoinHostPort(ip, "0"), "out")
	pid := startHome(t)
	attach(t, pid, Options{})
	if !reaches(t, pid, addr) {
		t.Errorf("from the home, %s did not answer; want reached through slirp4netns", addr)
	}
}

// With the host's own addresses refused, a server the host runs beyond
// loopback (the web chat or NATS bound to 0.0.0.0) is out of reach too,
// while other machines stay reachable.
func TestRefuseHostAddresses(t *testing.T) {
	needNamespaces(t)
	ip := hostAddress()
	if ip == "" {
		t.Skip("no non-loopback IPv4 address on this machine")
	}
	addr := serve(t, net.JoinHostPort(ip, "0"), "out")
	refuse, err := HostAddrs()
	if err != nil || !slices.ContainsFunc(refuse, func(p netip.Prefix) bool { return p.Addr().String() == ip }) {
		t.Fatalf("HostAddrs() = %v, %v; want %s among them", refuse, err, ip)
	}
	pid := startHome(t)
	attach(t, pid, Options{RefuseHost: true})
	if reaches(t, pid, addr) {
		t.Errorf("from the home, the host's %s answered; want it refused", addr)
	}
}

// UDP goes out too: a datagram to an echo server on the machine's own
// address comes back.
func TestOutboundUDP(t *testing.T) {
	needNamespaces(t)
	ip := hostAddress()
	if ip == "" {
		t.Skip("no non-loopback IPv4 address on this machine")
	}
	pc, err := net.ListenPacket("udp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 512)
		for {
			k, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(buf[:k], from)
		}
	}()
	n := attach(t, startHome(t), Options{})
	c, err := n.Dial(context.Background(), "udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	k, err := c.Read(buf)
	if err != nil || string(buf[:k]) != "ping" {
		t.Errorf("UDP echo from the home: %q, %v; want ping", buf[:k], err)
	}
}

// A forwarded host loopback address answers inside the home at the same
// address; another port of the host's loopback does not.
func TestForward(t *testing.T) {
	needNamespaces(t)
	model := serve(t, "127.0.0.1:0", "model API")
	other := serve(t, "127.0.0.1:0", "web chat")
	pid := startHome(t)
	attach(t, pid, Options{Forward: []string{model}})
	if !reaches(t, pid, model) {
		t.Errorf("forwarded %s did not answer inside the home", model)
	}
	if reaches(t, pid, other) {
		t.Errorf("%s, not forwarded, answered inside the home", other)
	}
}

func TestForwardRefusesOtherAddresses(t *testing.T) {
	for _, f := range []string{"192.0.2.1:80", "127.0.0.1", "localhost:80", "127.0.0.1:0"} {
		_, err := Attach(testLog(t).WithContext(context.Background()), os.Getpid(), Options{Forward: []string{f}})
		if !errors.Is(err, ErrForward) {
			t.Errorf("Forward %q: got %v; want ErrForward", f, err)
		}
	}
}

// Attaching to a process in the host's namespace would put slirp4netns's
// interface and default route on the host.
func TestAttachRefusesHostNamespace(t *testing.T) {
	needNamespaces(t)
	_, err := Attach(testLog(t).WithContext(context.Background()), os.Getpid(), Options{})
	if !errors.Is(err, ErrHostNamespace) {
		t.Fatalf("Attach(own pid): got %v; want ErrHostNamespace", err)
	}
}

// The resolv.conf a home binds at /etc/resolv.conf resolves names through
// the namespace's DNS.
func TestResolvConf(t *testing.T) {
	needRoot(t)
	const name = "deb.debian.org"
	if _, err := net.LookupHost(name); err != nil {
		t.Skipf("the host cannot resolve %s: %v", name, err)
	}
	path, err := ResolvConf(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pid := startHome(t, "--ro-bind", path, "/etc/resolv.conf")
	n := attach(t, pid, Options{})
	out, err := exec.Command("nsenter", "-t", fmt.Sprint(pid), "-n", "-m", "-r", "--",
		"getent", "ahostsv4", name).CombinedOutput()
	if err != nil || !strings.Contains(string(out), name) {
		t.Errorf("getent ahostsv4 %s in the home: %v: %q", name, err, out)
	}
	// And Dial resolves names the same way.
	c, err := n.Dial(context.Background(), "udp", net.JoinHostPort(name, "53"))
	if err != nil {
		t.Errorf("Dial resolving %s: %v", name, err)
	} else {
		c.Close()
	}
}

// Dial reaches the namespace's own loopback, where the host does not.
func TestDialReachesNamespaceLoopback(t *testing.T) {
	needNamespaces(t)
	pid := startHome(t)
	n := attach(t, pid, Options{})
	port := serveInside(t, pid, "dev server")
	addr := net.JoinHostPort("127.0.0.1", port)
	if c, err := net.DialTimeout("tcp", addr, 5*time.Second); err == nil {
		c.Close()
		t.Fatalf("the host reached %s: the server is not inside the namespace", addr)
	}
	for _, a := range []string{addr, net.JoinHostPort("localhost", port)} {
		c, err := n.Dial(context.Background(), "tcp", a)
		if err != nil {
			t.Errorf("Dial %s: %v", a, err)
			continue
		}
		if got := get(t, c); !strings.Contains(got, "dev server") {
			t.Errorf("Dial %s answered %q; want the dev server", a, got)
		}
	}
}

// The proxy carries a browser's requests into the namespace: absolute-URI
// GETs and CONNECT tunnels.
func TestProxy(t *testing.T) {
	needNamespaces(t)
	pid := startHome(t)
	n := attach(t, pid, Options{})
	port := serveInside(t, pid, "dev server")
	pu, err := n.ProxyURL()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(pu)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if got := fetch(t, client, "http://"+net.JoinHostPort(host, port)+"/"); !strings.Contains(got, "dev server") {
			t.Errorf("GET through the proxy to %s:%s: %q; want the dev server", host, port, got)
		}
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n", port, port)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v %v", res, err)
	}
	fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
	body, _ := io.ReadAll(br)
	c.Close()
	if !strings.Contains(string(body), "dev server") {
		t.Errorf("through the CONNECT tunnel: %q; want the dev server", body)
	}
}

// Two homes: a server in one is out of reach of the other, by a program
// there, by Dial and by its proxy.
func TestTwoHomesApart(t *testing.T) {
	needNamespaces(t)
	a, b := startHome(t), startHome(t)
	na, nb := attach(t, a, Options{}), attach(t, b, Options{})
	port := serveInside(t, a, "A's secret")
	addr := net.JoinHostPort("127.0.0.1", port)
	if !reaches(t, a, addr) {
		t.Fatalf("A's own server %s does not answer in A", addr)
	}
	if reaches(t, b, addr) {
		t.Errorf("B reached A's %s", addr)
	}
	if c, err := na.Dial(context.Background(), "tcp", addr); err != nil {
		t.Errorf("A's Dial %s: %v", addr, err)
	} else {
		c.Close()
	}
	if c, err := nb.Dial(context.Background(), "tcp", addr); err == nil {
		c.Close()
		t.Errorf("B's Dial reached A's %s", addr)
	}
	pu, err := nb.ProxyURL()
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(pu)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	if got := fetch(t, client, "http://"+addr+"/"); strings.Contains(got, "A's secret") {
		t.Errorf("B's proxy fetched A's %s: %q", addr, got)
	}
}

// Close ends slirp4netns and the forwards; the namespace has no way out.
func TestCloseLeavesNoSlirp(t *testing.T) {
	needNamespaces(t)
	model := serve(t, "127.0.0.1:0", "model API")
	pid := startHome(t)
	n := attach(t, pid, Options{Forward: []string{model}})
	if _, err := n.ProxyURL(); err != nil {
		t.Fatal(err)
	}
	if !reaches(t, pid, model) {
		t.Fatalf("forward %s does not answer before Close", model)
	}
	if got := slirpsFor(t, pid); len(got) != 1 {
		t.Fatalf("slirp4netns processes for pid %d before Close: %v; want one", pid, got)
	}
	if err := n.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if got := slirpsFor(t, pid); len(got) != 0 {
		t.Errorf("slirp4netns processes for pid %d after Close: %v; want none", pid, got)
	}
	if reaches(t, pid, model) {
		t.Errorf("forward %s still answers after Close", model)
	}
	if _, err := n.Dial(context.Background(), "tcp", model); !errors.Is(err, ErrClosed) {
		t.Errorf("Dial after Close: %v; want ErrClosed", err)
	}
}

func TestProbe(t *testing.T) {
	err := Probe(Options{Slirp: filepath.Join(t.TempDir(), "slirp4netns")})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "install") {
		t.Errorf("Probe with no binary: %v; want ErrUnavailable saying what to install", err)
	}
}

// slirpsFor lists the slirp4netns processes serving pid's namespace.
func slirpsFor(t *testing.T, pid int) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var found []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if filepath.Base(args[0]) != "slirp4netns" {
			continue
		}
		// The namespace is its fd 5 (slirp.go).
		theirs, _ := os.Readlink(filepath.Join(filepath.Dir(p), "fd", "5"))
		if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); theirs != "" && theirs == ns {
			found = append(found, p)
		}
	}
	return found
}

func get(t *testing.T, c net.Conn) string {
	t.Helper()
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
	b, err := io.ReadAll(c)
	if err != nil {
		t.Errorf("read: %v", err)
	}
	return string(b)
}

func fetch(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Logf("GET %s: %v", u, err)
		return ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
