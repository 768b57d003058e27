package runner

import (
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
)

// A message's run is in its person's home, kept for the next: the two runs
// of one person share its /tmp and pid namespace, and each done event says
// until when the home is kept (status tells the person). With homes off,
// each run has a sandbox of its own and nothing is kept.
func TestRunsShareTheirPersonsHome(t *testing.T) {
	if sandbox.ProbeHomes() != nil {
		t.Skip("homes need root")
	}
	for _, homes := range []bool{true, false} {
		t.Run(map[bool]string{true: "homes", false: "off"}[homes], func(t *testing.T) {
			e := newRunnerEnv(t)
			cfg := Config{Timeout: time.Minute, Sandbox: &sandbox.Sandbox{}, HomeIdle: time.Hour}
			if !homes {
				cfg.HomesMax = -1
			}
			e.start(cfg)
			u := e.user(contract.ChannelWeb, "homer")
			before := time.Now()
			e.job(u, "one", "echo kept > /tmp/mark; readlink /proc/self/ns/pid")
			first := e.waitDone(u, "one", runnerWait)
			e.job(u, "two", "cat /tmp/mark 2>/dev/null; readlink /proc/self/ns/pid")
			second := e.waitDone(u, "two", runnerWait)
			shared := second.Text == "kept\n"+first.Text
			if shared != homes {
				t.Errorf("second run %q after first %q: shared the first's /tmp and pid namespace %v; want %v", second.Text, first.Text, shared, homes)
			}
			warm := !first.WarmUntil.IsZero()
			if warm != homes {
				t.Errorf("done's WarmUntil %v; want set: %v", first.WarmUntil, homes)
			}
			if homes && (first.WarmUntil.Before(before.Add(time.Hour)) || first.WarmUntil.After(time.Now().Add(time.Hour))) {
				t.Errorf("WarmUntil %v; want about an hour (HomeIdle) after the run", first.WarmUntil)
			}
		})
	}
}
