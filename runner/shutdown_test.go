package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// Asked to stop, the runner lets the run under way finish within
// StopGrace (its reply is the real one, not "interrupted") and takes no
// new job meanwhile: that one stays in JOBS for the next runner.
func TestRunnerShutdownLetsRunFinish(t *testing.T) {
	e := newRunnerEnv(t)
	stop := e.start(Config{Timeout: time.Minute, StopGrace: 20 * time.Second})
	alice, bob := e.user(contract.ChannelWeb, "alice"), e.user(contract.ChannelWeb, "bob")
	e.job(alice, "a1", "touch started; sleep 2; echo finished")
	natstest.CheckFor(t, runnerWait, runnerPoll, func() error {
		_, err := os.Stat(filepath.Join(e.workspaces, alice.Key(), "started"))
		return err
	})

	ended := make(chan error, 1)
	go func() { ended <- stop() }()
	time.Sleep(200 * time.Millisecond) // the runner is stopping
	e.job(bob, "b1", "echo should wait")
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("Run: got %v; want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still going 20s after its context ended (the run takes 2s)")
	}
	ev, _, ok := e.doneEvent(alice, "a1")
	if !ok || ev.Status != contract.StatusOK || ev.Text != "finished" {
		t.Errorf("done event %+v (found %v); want ok finished", ev, ok)
	}
	if _, _, ok := e.doneEvent(bob, "b1"); ok {
		t.Error("a job arriving while the runner stopped was run")
	}
	st, err := e.js.Stream(t.Context(), contract.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	// alice's job leaves JOBS once the server has taken its ack, which
	// Run does not wait for.
	natstest.CheckFor(t, runnerWait, runnerPoll, func() error {
		info, err := st.Info(t.Context())
		if err != nil {
			return err
		}
		if info.State.Msgs != 1 {
			return fmt.Errorf("JOBS holds %d jobs; want bob's, left for the next runner", info.State.Msgs)
		}
		return nil
	})
}
