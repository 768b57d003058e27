package netns

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/runner/child"
)

// stopWait is how long Close lets slirp4netns end by its exit pipe before
// killing it.
const stopWait = 3 * time.Second

// slirp is one slirp4netns process serving a namespace, reaped by child
// (no pidfd of Go's held for it: a file less in the runner for each home).
type slirp struct {
	p      *child.Process
	exit   *os.File      // write end of --exit-fd: closing it ends slirp4netns
	done   chan struct{} // closed once it has exited and its output is read
	stderr *tail
	// startup is the time from its start to its ready byte.
	startup time.Duration
}

// startSlirp starts slirp4netns on the network namespace ns, or, when
// helper is not 0, on the namespaces of that process (see below), and
// waits for its ready byte (written once the interface, route and DNS are
// configured), its exit, or ctx.
func startSlirp(ctx context.Context, bin string, ns *os.File, helper int) (*slirp, error) {
	log := *zerolog.Ctx(ctx)
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("slirp4netns ready pipe: %w", err)
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, fmt.Errorf("slirp4netns exit pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		exitR.Close()
		exitW.Close()
		return nil, fmt.Errorf("slirp4netns output pipe: %w", err)
	}
	s := &slirp{exit: exitW, done: make(chan struct{}), stderr: &tail{max: 4096}}
	// fd 3 and 4 in the child: ExtraFiles[0] and [1], then the namespace.
	// As root, the namespace by path, not pid: given a pid, slirp4netns
	// also joins that process's user namespace, which for an unprivileged
	// bubblewrap is a nested one without power over the network namespace
	// (setns: EPERM). Without root, slirp4netns must join the user
	// namespace owning it (to open its tap device there, and to make its
	// own sandbox, which it does only by a pid): the helper's pid, which is
	// in both.
	target := []string{"--netns-type=path", "/proc/self/fd/5", Interface}
	if helper != 0 {
		target = []string{strconv.Itoa(helper), Interface}
	}
	cmd := exec.Command(bin, append([]string{"--configure", "--mtu=" + strconv.Itoa(mtu), "--disable-host-loopback",
		"--enable-sandbox", "--enable-seccomp", "--ready-fd=3", "--exit-fd=4"}, target...)...)
	cmd.ExtraFiles = []*os.File{readyW, exitR, ns}
	cmd.Stdout, cmd.Stderr = outW, outW
	start := time.Now()
	s.p, err = child.Start(cmd)
	readyW.Close()
	exitR.Close()
	outW.Close()
	if err != nil {
		outR.Close()
		exitW.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	read := make(chan struct{})
	go func() {
		_, _ = io.Copy(s.stderr, outR)
		outR.Close()
		close(read)
	}()
	go func() {
		<-s.p.Done()
		select {
		case <-read:
		case <-time.After(time.Second): // something it started holds the pipe
		}
		close(s.done)
	}()
	ready := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := readyR.Read(b[:])
		ready <- err
	}()
	select {
	case err = <-ready:
		if err == nil {
			s.startup = time.Since(start)
			return s, nil
		}
		<-s.done // no ready byte: it exited
		err = fmt.Errorf("slirp4netns ended before ready: %s: %s", s.p.State(), s.stderr)
	case <-ctx.Done():
		err = fmt.Errorf("slirp4netns not ready: %w (stderr: %s)", ctx.Err(), s.stderr)
	}
	s.stop(log)
	return nil, err
}

// stop closes the exit pipe, which ends slirp4netns, and kills it if it has
// not ended within stopWait.
func (s *slirp) stop(log zerolog.Logger) {
	s.exit.Close()
	select {
	case <-s.done:
	case <-time.After(stopWait):
		log.Warn().Int("slirp_pid", s.p.Pid).Msg("netns: slirp4netns ignored its exit pipe; killing it")
		_ = s.p.Kill()
		<-s.done
	}
	log.Debug().Int("slirp_pid", s.p.Pid).Str("state", s.p.State()).
		Str("stderr", s.stderr.String()).Msg("netns: slirp4netns ended")
}

// tail keeps the last max bytes written to it: slirp4netns's messages, for
// errors and logs.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = t.b[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
