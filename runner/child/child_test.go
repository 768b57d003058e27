package child

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/internal/testkit"
)

// A started process holds no file open here while it runs (os/exec keeps
// a pidfd until Wait), is reaped once it ends (no zombie of ours left),
// says how it ended, and Signal after its end reaches no other process.
func TestStartHoldsNoFile(t *testing.T) {
	before := testkit.OpenFiles(t)
	var ps []*Process
	for range 4 {
		p, err := Start(exec.Command("sleep", "30"))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if n := testkit.OpenFiles(t) - before; n > 0 {
		t.Errorf("%d files open for 4 running processes; want none", n)
	}
	for _, p := range ps {
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("a killed process was not reaped")
		}
		if got := p.State(); got != "signal: killed" {
			t.Errorf("state %q; want signal: killed", got)
		}
		// The pid may belong to another process by now: only a zombie
		// whose parent is this process would be ours.
		status, _ := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/status")
		if bytes.Contains(status, []byte("State:\tZ")) && bytes.Contains(status, []byte("PPid:\t"+strconv.Itoa(os.Getpid())+"\n")) {
			t.Errorf("pid %d is left a zombie", p.Pid)
		}
		if err := p.Signal(syscall.SIGTERM); err != os.ErrProcessDone {
			t.Errorf("Signal after the end: %v; want os.ErrProcessDone", err)
		}
	}
	p, err := Start(exec.Command("sh", "-c", "exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if got := p.State(); got != "exit status 3" {
		t.Errorf("state %q; want exit status 3", got)
	}
	cmd := exec.Command("true")
	cmd.Stdout = &strings.Builder{}
	if _, err := Start(cmd); err == nil {
		t.Error("a process writing to a non-file was started")
	}
}
