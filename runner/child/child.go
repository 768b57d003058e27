// Package child keeps processes that live as long as what they serve (a
// home's holder, its slirp4netns) without a file open for each: Go's os
// holds a pidfd for every process it starts until it is waited for, and
// every file open in the runner is copied and closed again by every
// program the runner starts after it (with 6,000 open, a start of `true`
// costs about 1 CPU-ms more: BenchmarkSpawnAmongFiles). A Process is
// reaped here by its pid, which stays its own until then.
package child

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Process is a started program this package reaps.
type Process struct {
	Pid  int
	done chan struct{}

	mu     sync.Mutex // held from its exit until it is reaped
	reaped bool
	status syscall.WaitStatus
}

// Start starts cmd and lets go of Go's handle on it. cmd's Stdin, Stdout
// and Stderr must be nil or files (*os.File): nothing of os/exec runs
// after Start, and cmd.Wait must not be called.
func Start(cmd *exec.Cmd) (*Process, error) {
	for _, f := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		if _, isFile := f.(*os.File); f != nil && !isFile {
			return nil, errors.New("child: stdin, stdout and stderr must be files")
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Pid: cmd.Process.Pid, done: make(chan struct{})}
	_ = cmd.Process.Release() // closes Go's pidfd; the pid is reaped below
	go p.reap()
	return p, nil
}

// reap waits for the exit without reaping, so that Signal, under mu,
// never reaches another process given the pid after, then reaps.
func (p *Process) reap() {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	p.mu.Lock()
	for {
		if _, err := syscall.Wait4(p.Pid, &p.status, 0, nil); err != syscall.EINTR {
			break
		}
	}
	p.reaped = true
	p.mu.Unlock()
	close(p.done)
}

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Signal sends sig to the process, unless it has exited
// (os.ErrProcessDone).
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reaped {
		return os.ErrProcessDone
	}
	return syscall.Kill(p.Pid, sig)
}

// Kill sends SIGKILL (Signal).
func (p *Process) Kill() error { return p.Signal(syscall.SIGKILL) }

// State is how the process ended, as os.ProcessState says it ("exit status
// 1", "signal: killed"); "" before Done.
func (p *Process) State() string {
	select {
	case <-p.done:
	default:
		return ""
	}
	switch ws := p.status; {
	case ws.Exited():
		return "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		return "signal: " + ws.Signal().String()
	}
	return "ended"
}
