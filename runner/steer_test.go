package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// An agent that takes no messages while it works (the shell) leaves every
// message the person added to its run, and its reply lists them all: none
// is lost.
func TestShellListsEveryMessageAddedToItsRun(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{})
	u := e.user(contract.ChannelWeb, "alice")
	gate := filepath.Join(t.TempDir(), "go")
	e.job(u, "m1", "while [ ! -e "+gate+" ]; do sleep 0.01; done; echo ran")
	for i, text := range []string{"echo first", "echo second"} {
		ev := contract.Event{Kind: contract.KindSteer, User: u, JobID: "m1", Text: text}
		if err := bus.PublishEvent(t.Context(), e.js, ev, contract.MsgID(u, "m1", "steer", string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ev := e.waitDone(u, "m1", runnerWait)
	for _, want := range []string{"ran", "• echo first", "• echo second"} {
		if !strings.Contains(ev.Text, want) {
			t.Errorf("reply %q; want it to contain %q", ev.Text, want)
		}
	}
}
