package runner

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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

// A preview opens the person's own app, never what textslash forwards
// into their home: the screenshot endpoint (or the model API on the
// host's loopback) listens on a forwarded port there, and a link to it
// would hand the endpoint to whoever holds the link.
func TestPreviewRefusesForwardedPorts(t *testing.T) {
	if sandbox.ProbeHomes() != nil {
		t.Skip("homes need root")
	}
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute, Sandbox: &sandbox.Sandbox{}, HomeIdle: time.Hour})
	u := e.user(contract.ChannelWeb, "forwarded")
	e.job(u, "url", `echo "$TEXTSLASH_SHOT_URL"`)
	ev := e.waitDone(u, "url", runnerWait)
	shot, err := url.Parse(strings.TrimSpace(ev.Text))
	if err != nil || shot.Port() == "" {
		t.Fatalf("the run's TEXTSLASH_SHOT_URL: %q (%v)", ev.Text, err)
	}
	j := contract.Job{ID: "pv", User: u, Text: "preview " + shot.Port(), Action: contract.ActionHome, At: time.Now().UTC()}
	data, err := contract.Encode(&j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.Publish(t.Context(), contract.JobSubject(u), data, jetstream.WithMsgID(contract.MsgID(u, j.ID, "job"))); err != nil {
		t.Fatal(err)
	}
	done := e.waitDone(u, "pv", runnerWait)
	if strings.Contains(done.Text, "preview.localhost") || !strings.Contains(done.Text, "textslash's own") {
		t.Errorf("preview of the forwarded screenshot endpoint's port %s: %q; want it refused as textslash's own", shot.Port(), done.Text)
	}
}
