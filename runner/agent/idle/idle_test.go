package idle

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
)

// A process group armed to rest is stopped once the time is up, unless
// take says not now; Wake continues it, and a rest disarmed by Wake stops
// nothing.
func TestRestStopsAndWakes(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid
	group := func() ([]int, func()) { return []int{pid}, func() {} }
	var r Rest

	r.Arm(time.Hour, group)
	r.Wake()                                                               // disarmed: nothing is stopped
	r.Arm(10*time.Millisecond, func() ([]int, func()) { return nil, nil }) // "not now"
	time.Sleep(50 * time.Millisecond)
	if s := state(pid); s == "T" {
		t.Fatalf("stopped although take said not now")
	}
	r.Arm(10*time.Millisecond, group)
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if s := state(pid); s != "T" {
			return fmt.Errorf("state %q; want T once rested", s)
		}
		return nil
	})
	r.Wake()
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if s := state(pid); s == "T" {
			return errors.New("still stopped after Wake")
		}
		return nil
	})
}

// state is process pid's state letter.
func state(pid int) string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(stat)
	if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 {
		return f[0]
	}
	return ""
}
