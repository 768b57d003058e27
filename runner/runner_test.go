package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/sandbox"
)

const (
	runnerWait = 15 * time.Second
	runnerPoll = 10 * time.Millisecond
)

// runnerEnv is an embedded, provisioned JetStream server for a Runner.
type runnerEnv struct {
	t          *testing.T
	js         jetstream.JetStream
	workspaces string
	logs       io.Writer // when set, start logs every line here instead of errors to the test's log
	// prepare, when set, is given the Runner start made before it runs.
	prepare func(*Runner)
}

func newRunnerEnv(t *testing.T) *runnerEnv {
	t.Helper()
	s := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), s.JS, bus.Options{}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	return &runnerEnv{t: t, js: s.JS, workspaces: t.TempDir()}
}

// start runs a Runner with cfg (Workspaces filled in; Agent, when empty,
// the shell) until the returned stop is called or the test ends. stop
// cancels Run and returns its error once it has returned.
func (e *runnerEnv) start(cfg Config) (stop func() error) {
	e.t.Helper()
	cfg.Agent = cmp.Or(cfg.Agent, AgentShell)
	cfg.Workspaces = e.workspaces
	log := zerolog.New(zerolog.NewTestWriter(e.t)).Level(zerolog.ErrorLevel)
	if e.logs != nil {
		log = zerolog.New(e.logs)
	}
	r, err := New(cfg, e.js, log)
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	if r.AgentName() != cfg.Agent {
		e.t.Fatalf("AgentName: got %q; want %q", r.AgentName(), cfg.Agent)
	}
	if e.prepare != nil {
		e.prepare(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- r.Run(ctx) }()
	var stopped bool
	var runErr error
	stop = func() error {
		e.t.Helper()
		if stopped {
			return runErr
		}
		stopped = true
		cancel()
		select {
		case runErr = <-ended:
		case <-time.After(30 * time.Second):
			e.t.Fatalf("Run did not return 30s after its context ended")
		}
		return runErr
	}
	e.t.Cleanup(func() {
		if err := stop(); err != nil {
			e.t.Errorf("Run: got %v; want nil", err)
		}
	})
	return stop
}

func (e *runnerEnv) user(channel, id string) contract.User {
	e.t.Helper()
	u, err := contract.NewUser(channel, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return u
}

// job publishes a job as the dispatcher does.
func (e *runnerEnv) job(u contract.User, id, text string) {
	e.t.Helper()
	j := contract.Job{ID: id, User: u, Text: text, At: time.Now().UTC()}
	data, err := contract.Encode(&j)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.js.Publish(e.t.Context(), contract.JobSubject(u), data, jetstream.WithMsgID(contract.MsgID(u, id, "job"))); err != nil {
		e.t.Fatalf("publish job %s: %v", id, err)
	}
}

// doneEvent returns the done event of job id, if there is one yet, and the
// subject it was published on.
func (e *runnerEnv) doneEvent(u contract.User, id string) (contract.Event, string, bool) {
	e.t.Helper()
	ctx := e.t.Context()
	st, err := e.js.Stream(ctx, contract.StreamEvents)
	if err != nil {
		e.t.Fatal(err)
	}
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(contract.UserEvents(u)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return contract.Event{}, "", false
		}
		if err != nil {
			e.t.Fatal(err)
		}
		seq = m.Sequence + 1
		var ev contract.Event
		if err := contract.Decode(m.Data, &ev); err != nil {
			e.t.Fatalf("event on %s: %v", m.Subject, err)
		}
		if ev.Kind == contract.KindDone && ev.JobID == id {
			return ev, m.Subject, true
		}
	}
}

// waitDone waits for the done event of job id.
func (e *runnerEnv) waitDone(u contract.User, id string, within time.Duration) contract.Event {
	e.t.Helper()
	var ev contract.Event
	natstest.CheckFor(e.t, within, runnerPoll, func() error {
		var subject string
		var ok bool
		if ev, subject, ok = e.doneEvent(u, id); !ok {
			return fmt.Errorf("no done event for job %s of %s", id, u)
		}
		if want := "ts.ev." + u.Channel + "." + u.ID + ".done"; subject != want {
			e.t.Errorf("done event subject: got %q; want %q", subject, want)
		}
		return nil
	})
	return ev
}

// jobsLeft waits until JOBS is empty: every job acknowledged.
func (e *runnerEnv) jobsAcked() {
	e.t.Helper()
	natstest.CheckFor(e.t, runnerWait, runnerPoll, func() error {
		st, err := e.js.Stream(e.t.Context(), contract.StreamJobs)
		if err != nil {
			return err
		}
		info, err := st.Info(e.t.Context())
		if err != nil {
			return err
		}
		if info.State.Msgs != 0 {
			return fmt.Errorf("JOBS holds %d jobs; want 0 (all acknowledged)", info.State.Msgs)
		}
		return nil
	})
}

func TestRunnerRunsJobs(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute})
	tests := []struct {
		text, wantText string
		wantExit       int
	}{
		{"echo hi", "hi", 0},
		{"printf '\\n  padded  \\n\\n'", "padded", 0},
		{"true", MsgNoOutput, 0},
		{"echo no; exit 3", "no\n\n[exit 3]", 3},
		{"echo to stderr >&2", "to stderr", 0},
	}
	for i, tt := range tests {
		u := e.user(contract.ChannelWeb, fmt.Sprint("user", i))
		e.job(u, fmt.Sprint("SM", i), tt.text)
		ev := e.waitDone(u, fmt.Sprint("SM", i), runnerWait)
		if ev.Status != contract.StatusOK || ev.Text != tt.wantText || ev.ExitCode != tt.wantExit {
			t.Errorf("%q: got status %q text %q exit %d; want %q %q %d", tt.text, ev.Status, ev.Text, ev.ExitCode,
				contract.StatusOK, tt.wantText, tt.wantExit)
		}
		if ev.User != u || ev.V != contract.Version || ev.At.IsZero() || ev.Truncated {
			t.Errorf("%q: got event %+v; want user %s, v1, a time, not truncated", tt.text, ev, u)
		}
	}
	e.jobsAcked()
}

func TestRunnerOutputCap(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute, OutputCap: 1000})
	u := e.user(contract.ChannelWeb, "alice")
	e.job(u, "m1", "yes | head -c 100000")
	ev := e.waitDone(u, "m1", runnerWait)
	if ev.Status != contract.StatusOK || !ev.Truncated || len(ev.Text) > 1000+len("\n[output truncated]") {
		t.Errorf("got status %q truncated %v, %d bytes; want ok, truncated, at most 1000 and the note", ev.Status, ev.Truncated, len(ev.Text))
	}
}

func TestRunnerTimeout(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Second})
	u := e.user(contract.ChannelSMS, "15551234567")
	e.job(u, "m1", "echo before; sleep 30")
	// sleep 30 would take 30s: the done event has to come from the timeout.
	ev := e.waitDone(u, "m1", runnerWait)
	if ev.Status != contract.StatusTimeout || !strings.HasPrefix(ev.Text, MsgTimeout) {
		t.Errorf("got status %q text %q; want %q, text starting %q", ev.Status, ev.Text, contract.StatusTimeout, MsgTimeout)
	}
	if !strings.Contains(ev.Text, "before") {
		t.Errorf("text: got %q; want the output so far (%q) too", ev.Text, "before")
	}
	if ev.DurationMS >= 30_000 {
		t.Errorf("duration: got %d ms; want under 30000", ev.DurationMS)
	}
	e.jobsAcked()
}

// At most Concurrency jobs run at once. Each job logs its start, waits for
// the test's go-ahead, and logs its end; appends to one file are ordered, so
// the log shows how many ran together.
func TestRunnerConcurrency(t *testing.T) {
	e := newRunnerEnv(t)
	shared := t.TempDir()
	logFile, release := filepath.Join(shared, "log"), filepath.Join(shared, "release")
	var users []contract.User
	for i := range 3 {
		u := e.user(contract.ChannelWeb, fmt.Sprint("u", i))
		users = append(users, u)
		e.job(u, "m"+u.ID, fmt.Sprintf(`echo "start %[1]s" >> %[2]q; while [ ! -e %[3]q ]; do sleep 0.02; done; echo "end %[1]s" >> %[2]q`,
			u.ID, logFile, release))
	}
	e.start(Config{Timeout: time.Minute, Concurrency: 2})

	readLog := func() []string {
		data, err := os.ReadFile(logFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		return strings.Fields(strings.ReplaceAll(string(data), " ", "_"))
	}
	natstest.CheckFor(t, runnerWait, runnerPoll, func() error {
		if got := readLog(); len(got) < 2 {
			return fmt.Errorf("log: got %q; want two starts", got)
		}
		return nil
	})
	// Two hold their slots: the third is still in the stream, not taken.
	cons, err := e.js.Consumer(t.Context(), contract.StreamJobs, contract.ConsumerRunner)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.NumAckPending != 2 || info.NumPending != 1 {
		t.Errorf("runner consumer with two running: got %d taken, %d waiting; want 2, 1", info.NumAckPending, info.NumPending)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if ev := e.waitDone(u, "m"+u.ID, runnerWait); ev.Status != contract.StatusOK {
			t.Errorf("%s: got status %q text %q; want ok", u, ev.Status, ev.Text)
		}
	}

	log := readLog()
	running, most := 0, 0
	for _, line := range log {
		switch {
		case strings.HasPrefix(line, "start_"):
			running++
		case strings.HasPrefix(line, "end_"):
			running--
		}
		most = max(most, running)
	}
	if most != 2 || len(log) != 6 {
		t.Errorf("log %q: got at most %d running at once; want 2 (and 6 lines)", log, most)
	}
	e.jobsAcked()
}

// takeAndDrop has a first runner take the job and give it back without
// finishing, as one that dies does; started says whether it got as far as
// marking the job started.
func takeAndDrop(t *testing.T, e *runnerEnv, u contract.User, id string, started bool) {
	t.Helper()
	cons, err := e.js.Consumer(t.Context(), contract.StreamJobs, contract.ConsumerRunner)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatalf("take the job: %v", err)
	}
	if started {
		ev := contract.Event{Kind: contract.KindStarted, User: u, JobID: id}
		if err := bus.PublishEvent(t.Context(), e.js, ev, contract.MsgID(u, id, string(contract.KindStarted))); err != nil {
			t.Fatal(err)
		}
	}
	if err := msg.Nak(); err != nil {
		t.Fatal(err)
	}
}

// A job taken by a runner that died before starting it is run by the next.
func TestRunnerRedeliveredUnstartedJobRuns(t *testing.T) {
	e := newRunnerEnv(t)
	u := e.user(contract.ChannelTelegram, "123456")
	e.job(u, "m1", "touch ran; echo ran")
	takeAndDrop(t, e, u, "m1", false)
	e.start(Config{Timeout: time.Minute})
	if ev := e.waitDone(u, "m1", runnerWait); ev.Status != contract.StatusOK || ev.Text != "ran" {
		t.Errorf("got status %q text %q; want ok %q", ev.Status, ev.Text, "ran")
	}
	e.jobsAcked()
}

// A job delivered a second time was started by a runner that died during
// it: it is reported as interrupted, not run again.
func TestRunnerRedeliveredJobIsNotRunAgain(t *testing.T) {
	e := newRunnerEnv(t)
	u := e.user(contract.ChannelTelegram, "123456")
	e.job(u, "m1", "touch ran")
	takeAndDrop(t, e, u, "m1", true)

	e.start(Config{Timeout: time.Minute})
	ev := e.waitDone(u, "m1", runnerWait)
	if ev.Status != contract.StatusInterrupted || ev.Text != MsgInterrupted {
		t.Errorf("got status %q text %q; want %q %q", ev.Status, ev.Text, contract.StatusInterrupted, MsgInterrupted)
	}
	if _, err := os.Stat(filepath.Join(e.workspaces, u.Key(), "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the job ran again: stat ran: got %v; want not exist", err)
	}
	e.jobsAcked()

	// The next job of that user runs normally.
	e.job(u, "m2", "echo fine")
	if ev := e.waitDone(u, "m2", runnerWait); ev.Status != contract.StatusOK || ev.Text != "fine" {
		t.Errorf("next job: got status %q text %q; want ok %q", ev.Status, ev.Text, "fine")
	}
}

func TestRunnerShutdownInterruptsRun(t *testing.T) {
	e := newRunnerEnv(t)
	stop := e.start(Config{Timeout: time.Minute})
	u := e.user(contract.ChannelWeb, "alice")
	e.job(u, "m1", "touch started; sleep 30")
	started := filepath.Join(e.workspaces, u.Key(), "started")
	natstest.CheckFor(t, runnerWait, runnerPoll, func() error {
		_, err := os.Stat(started)
		return err
	})

	ended := make(chan error, 1)
	go func() { ended <- stop() }()
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("Run: got %v; want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still going 20s after its context ended (sleep 30 is running)")
	}
	// Published before Run returned.
	ev, _, ok := e.doneEvent(u, "m1")
	if !ok {
		t.Fatal("no done event when Run returned; want one saying interrupted")
	}
	if ev.Status != contract.StatusInterrupted || !strings.Contains(ev.Text, MsgInterrupted) {
		t.Errorf("got status %q text %q; want %q with %q", ev.Status, ev.Text, contract.StatusInterrupted, MsgInterrupted)
	}
	if ev.DurationMS >= 30_000 {
		t.Errorf("duration: got %d ms; want under 30000", ev.DurationMS)
	}
	e.jobsAcked() // not redelivered to the next runner
}

func TestRunnerWorkspacePerUser(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: time.Minute})
	alice, bob := e.user(contract.ChannelWeb, "alice"), e.user(contract.ChannelSMS, "15551234567")
	script := func(mine string) string {
		return fmt.Sprintf(`pwd; echo "$HOME"; touch %s; ls | tr '\n' ' '`, mine)
	}
	e.job(alice, "a1", script("alice-file"))
	e.job(bob, "b1", script("bob-file"))
	tests := []struct {
		u        contract.User
		id, file string
	}{
		{alice, "a1", "alice-file"},
		{bob, "b1", "bob-file"},
	}
	for _, tt := range tests {
		ev := e.waitDone(tt.u, tt.id, runnerWait)
		dir := filepath.Join(e.workspaces, tt.u.Channel+"."+tt.u.ID)
		home := filepath.Join(e.workspaces, ".home", tt.u.Channel+"."+tt.u.ID)
		want := dir + "\n" + home + "\n" + tt.file
		if ev.Status != contract.StatusOK || ev.Text != want {
			t.Errorf("%s: got status %q text %q; want ok %q", tt.u, ev.Status, ev.Text, want)
		}
		for _, d := range []string{dir, home} {
			if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
				t.Errorf("%s: %s: got %v; want a directory", tt.u, d, err)
			}
		}
	}
	// The workspace stays between runs, and stays the user's own.
	e.job(alice, "a2", "ls | tr '\\n' ' '")
	if ev := e.waitDone(alice, "a2", runnerWait); ev.Text != "alice-file" {
		t.Errorf("alice's second run: got %q; want %q", ev.Text, "alice-file")
	}
	entries, err := os.ReadDir(e.workspaces)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range entries {
		names = append(names, de.Name())
	}
	if want := []string{".home", "sms.15551234567", "web.alice"}; !slices.Equal(names, want) {
		t.Errorf("workspaces: got %q; want %q", names, want)
	}
}

// As root with an agent user, jobs run as that user in workspaces it owns,
// however the workspaces directory came to be.
func TestRunnerAsAgentUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	const name = "textslash-agent"
	au, err := sandbox.LookupUser(name)
	if err != nil {
		t.Skipf("no agent user: %v", err)
	}
	tests := []struct {
		name  string
		mode  os.FileMode // of the workspaces directory made beforehand; 0: the runner makes it
		umask int         // the runner's umask, when not 022
	}{
		{"made by the runner", 0, 0},
		{"made by the runner, umask 077", 0, 0o077},
		{"made beforehand, 0755", 0o755, 0},
		{"made beforehand, 0700", 0o700, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newRunnerEnv(t)
			// t.TempDir and its parent are 0700: let the agent user through.
			for _, d := range []string{filepath.Dir(e.workspaces), e.workspaces} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			e.workspaces = filepath.Join(e.workspaces, "ws")
			if tt.mode != 0 {
				if err := os.Mkdir(e.workspaces, tt.mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(e.workspaces, tt.mode); err != nil { // past the umask
					t.Fatal(err)
				}
			}
			if tt.umask != 0 {
				// Process-wide: no test of this package runs in parallel.
				old := syscall.Umask(tt.umask)
				t.Cleanup(func() { syscall.Umask(old) })
			}
			e.start(Config{Timeout: time.Minute, AgentUser: name})
			u := e.user(contract.ChannelWeb, "alice")
			e.job(u, "m1", `id -u; touch mine && stat -c %u mine`)
			ev := e.waitDone(u, "m1", runnerWait)
			want := fmt.Sprintf("%d\n%d", au.UID, au.UID)
			if ev.Status != contract.StatusOK || ev.Text != want {
				t.Errorf("got status %q text %q; want ok %q", ev.Status, ev.Text, want)
			}
		})
	}
}

// events returns u's events of kind, in order.
func (e *runnerEnv) events(u contract.User, kind contract.EventKind) []contract.Event {
	e.t.Helper()
	ctx := e.t.Context()
	st, err := e.js.Stream(ctx, contract.StreamEvents)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []contract.Event
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(contract.EventSubject(u, kind)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			e.t.Fatal(err)
		}
		seq = m.Sequence + 1
		var ev contract.Event
		if err := contract.Decode(m.Data, &ev); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev)
	}
}

// A run with nothing to report still says, every Heartbeat, that it is
// alive and for how long.
func TestRunnerHeartbeatProgress(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Heartbeat: 300 * time.Millisecond})
	u := e.user(contract.ChannelWhatsApp, "15551234567")
	e.job(u, "m1", "sleep 1.3")
	e.waitDone(u, "m1", runnerWait)
	var beats []string
	for _, ev := range e.events(u, contract.KindProgress) {
		if strings.HasPrefix(ev.Text, "Still working (") && strings.HasSuffix(ev.Text, "): “sleep 1.3”") {
			beats = append(beats, ev.Text)
		}
	}
	if len(beats) < 2 || len(beats) > 5 {
		t.Errorf("heartbeats %q; want about one per 300ms of a 1.3s run", beats)
	}
}

// A run that leaves uncommitted changes in a git workspace asks for
// approval, with what changed; a clean one does not.
func TestRunnerApprovalRequest(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{})
	u := e.user(contract.ChannelWeb, "alice")
	e.job(u, "m1", "git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m init && echo ok")
	if ev := e.waitDone(u, "m1", runnerWait); ev.Approval || ev.Text != "ok" {
		t.Errorf("clean repository: approval %t, text %q; want none, ok", ev.Approval, ev.Text)
	}
	e.job(u, "m2", "printf 'a\\nb\\n' > notes.txt && echo wrote")
	ev := e.waitDone(u, "m2", runnerWait)
	if !ev.Approval {
		t.Fatalf("changes left: no approval request (%q)", ev.Text)
	}
	for _, want := range []string{"wrote\n\nChanges waiting for your approval: 1 file, +2 −0", "A notes.txt (+2 −0)", MsgApprove} {
		if !strings.Contains(ev.Text, want) {
			t.Errorf("approval text lacks %q:\n%s", want, ev.Text)
		}
	}
	e.job(u, "m3", "echo outside git > /dev/null; cd / && echo done")
	if ev := e.waitDone(u, "m3", runnerWait); !ev.Approval {
		t.Errorf("changes still there: approval %t; want the request again", ev.Approval)
	}
}

// A standalone runner with IdleExit ends Run by itself once no job came
// for that long, but never while a run is going.
func TestRunnerIdleExit(t *testing.T) {
	e := newRunnerEnv(t)
	r, err := New(Config{Agent: AgentShell, Workspaces: e.workspaces, IdleExit: 700 * time.Millisecond}, e.js, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- r.Run(context.Background()) }()
	u := e.user(contract.ChannelWeb, "alice")
	e.job(u, "m1", "sleep 1.5; echo slow")
	if ev := e.waitDone(u, "m1", runnerWait); ev.Text != "slow" || ev.Status != contract.StatusOK {
		t.Fatalf("the run longer than IdleExit: %q (%s)", ev.Text, ev.Status)
	}
	select {
	case err := <-ended:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still going 10s after the last job; want it ended after 700ms idle")
	}
}

// The runner drops a job the dispatcher counts finished (cancelled before
// it ran) and runs one the dispatcher's state does not know yet: after a
// crash the state can lag behind the jobs it published.
func TestRunnerDropsOnlyFinishedJobs(t *testing.T) {
	e := newRunnerEnv(t)
	u := e.user(contract.ChannelTelegram, "123456")
	users, err := e.js.KeyValue(t.Context(), contract.BucketUsers)
	if err != nil {
		t.Fatal(err)
	}
	st := contract.UserState{State: contract.StateWorking, JobID: "m1", Finished: []string{"m0"}}
	data, err := contract.Encode(&st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := users.Put(t.Context(), u.Key(), data); err != nil {
		t.Fatal(err)
	}
	e.job(u, "m0", "touch cancelled")
	e.job(u, "m2", "echo ahead")
	e.start(Config{Timeout: time.Minute})
	if ev := e.waitDone(u, "m2", runnerWait); ev.Status != contract.StatusOK || ev.Text != "ahead" {
		t.Errorf("job ahead of the state: got status %q text %q; want ok %q", ev.Status, ev.Text, "ahead")
	}
	e.jobsAcked()
	if _, _, ok := e.doneEvent(u, "m0"); ok {
		t.Error("the finished job m0 has a done event")
	}
	if _, err := os.Stat(filepath.Join(e.workspaces, u.Key(), "cancelled")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the finished job m0 ran: stat: %v", err)
	}
}

// A run cancelled before it printed anything reports no text: the
// dispatcher's "Cancelled." is the one line the person gets. (One that had
// printed keeps its output after "Stopped.": TestRunnerImagesOfCutRuns.)
func TestRunnerCancelledRunSaysNothingTwice(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{})
	u := e.user(contract.ChannelWeb, "canceller")
	e.job(u, "m1", "sleep 30")
	natstest.CheckFor(t, runnerWait, runnerPoll, func() error {
		if len(e.events(u, contract.KindStarted)) == 0 {
			return fmt.Errorf("not started")
		}
		return nil
	})
	if err := e.js.Conn().Publish(contract.CancelSubject(u), []byte("m1")); err != nil {
		t.Fatal(err)
	}
	if ev := e.waitDone(u, "m1", runnerWait); ev.Status != contract.StatusCanceled || ev.Text != "" {
		t.Errorf("done %q with text %q; want canceled with none", ev.Status, ev.Text)
	}
}

// A run that fails because the agent cannot run here says why in its
// reply, not MsgFailed: the same would happen to every message.
func TestSetupFailureSaysWhy(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Agent: "true && claud", Timeout: time.Minute})
	u := e.user(contract.ChannelWeb, "setup")
	e.job(u, "SM1", "hi")
	ev := e.waitDone(u, "SM1", runnerWait)
	if ev.Status != contract.StatusError || !strings.Contains(ev.Text, "claud: command not found") || strings.Contains(ev.Text, MsgFailed) {
		t.Errorf("done: got %q %q; want an error saying claud: command not found", ev.Status, ev.Text)
	}
}
