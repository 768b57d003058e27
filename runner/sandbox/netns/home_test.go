package netns

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// needRoot skips a test that cannot run but as root (it adds the host's
// addresses, or enters a home's mount namespace), or cannot make
// namespaces or network them here.
func needRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("needs root")
	}
	needNamespaces(tb)
}

// needNamespaces skips a test that cannot make namespaces or network them
// here, as root or not (TestUnprivileged runs them as nobody).
func needNamespaces(tb testing.TB) {
	tb.Helper()
	if err := Probe(Options{}); err != nil {
		tb.Skipf("%v (source scripts/setup)", err)
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		tb.Skip("no bwrap (source scripts/setup)")
	}
}

// startHome starts a sandbox as a home is made: bubblewrap with
// --unshare-all and no --share-net, its child's pid read from --info-fd.
// extra are more bwrap arguments before the command. It ends with the test.
func startHome(tb testing.TB, extra ...string) int {
	tb.Helper()
	pid, stop, err := newHome(extra...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	return pid
}

// newHome starts a home's sandbox and returns its child's pid and how to
// end it.
func newHome(extra ...string) (int, func(), error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, nil, err
	}
	defer r.Close()
	args := append([]string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"}, extra...)
	args = append(args, "--unshare-all", "--die-with-parent", "--info-fd", "3", "sleep", "infinity")
	cmd := exec.Command("bwrap", args...)
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stderr = os.Stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		return 0, nil, err
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil || info.ChildPid == 0 {
		stop()
		return 0, nil, fmt.Errorf("bwrap --info-fd: %v (child pid %d)", err, info.ChildPid)
	}
	return info.ChildPid, stop, nil
}

// attach networks pid's namespace for the test.
func attach(tb testing.TB, pid int, o Options) *Net {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := Attach(zerolog.New(zerolog.NewTestWriter(tb)).WithContext(ctx), pid, o)
	if err != nil {
		tb.Fatalf("Attach(%d): %v", pid, err)
	}
	tb.Cleanup(func() { n.Close() })
	return n
}

// inNamespace runs a command in pid's network namespace, as a program of
// the home would run, and returns its output and error.
func inNamespace(pid int, args ...string) (string, error) {
	cmd, err := nsenterNet(pid, args...)
	if err != nil {
		return "", err
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// nsenterNet is the command running args in pid's network namespace: as
// root, by nsenter's -n; else through the user namespace owning it, as
// this package's helper enters.
func nsenterNet(pid int, args ...string) (*exec.Cmd, error) {
	if pid == os.Getpid() {
		return exec.Command(args[0], args[1:]...), nil // the host's own
	}
	if privileged() {
		return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(pid), "-n", "--"}, args...)...), nil
	}
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, err
	}
	owner, err := ownerOf(ns)
	if err != nil {
		ns.Close()
		return nil, err
	}
	cmd := exec.Command("nsenter", append([]string{"--user=/proc/self/fd/3", "--net=/proc/self/fd/4", "--preserve-credentials", "--"}, args...)...)
	cmd.ExtraFiles = []*os.File{owner, ns} // the child's own copies once started
	return cmd, nil
}

// reaches says whether a program in pid's network namespace can open a TCP
// connection to addr (host:port) and read an HTTP answer from it.
func reaches(tb testing.TB, pid int, addr string) bool {
	tb.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		tb.Fatal(err)
	}
	script := fmt.Sprintf(`exec 3<>/dev/tcp/%s/%s && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && head -c 12 <&3`, host, port)
	out, err := inNamespace(pid, "timeout", "10", "bash", "-c", script)
	if err != nil {
		tb.Logf("from pid %d to %s: %v: %s", pid, addr, err, strings.TrimSpace(out))
		return false
	}
	return strings.HasPrefix(out, "HTTP/1.")
}

// serve starts an HTTP server answering body on addr (port 0 for any).
func serve(tb testing.TB, addr, body string) string {
	tb.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, body)
	})}
	go srv.Serve(l)
	tb.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// hostAddress is an IPv4 address of this machine that is not loopback
// (eth0's), or "" when it has none.
func hostAddress() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String()
			}
		}
	}
	return ""
}

var servingPort = regexp.MustCompile(`port (\d+)`)

// serveInside starts a web server as a person's program would, inside
// pid's namespace on 127.0.0.1, serving a file holding body; it returns its
// port.
func serveInside(tb testing.TB, pid int, body string) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd, err := nsenterNet(pid, "python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", dir)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	m := servingPort.FindStringSubmatch(line)
	if m == nil {
		tb.Fatalf("server in namespace: %q, %v", line, err)
	}
	go io.Copy(io.Discard, out)
	return m[1]
}

func testLog(tb testing.TB) zerolog.Logger { return zerolog.New(zerolog.NewTestWriter(tb)) }
