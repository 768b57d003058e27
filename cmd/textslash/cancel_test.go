package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/channels/webchat"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// sseInbox keeps every event of a web chat session read so far, so that
// waiting for one event never loses another that came first.
type sseInbox struct {
	t    *testing.T
	ch   <-chan sseEvent
	seen []sseEvent
}

func newInbox(t *testing.T, c *chat) *sseInbox {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &sseInbox{t: t, ch: c.events(ctx)}
}

// await returns the first event, seen before or arriving within timeout,
// that matches.
func (b *sseInbox) await(what string, timeout time.Duration, match func(sseEvent) bool) sseEvent {
	b.t.Helper()
	for _, ev := range b.seen {
		if match(ev) {
			return ev
		}
	}
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-b.ch:
			if !ok {
				b.t.Fatalf("waiting for %s: event stream closed", what)
			}
			b.seen = append(b.seen, ev)
			if match(ev) {
				return ev
			}
		case <-deadline:
			b.t.Fatalf("waiting for %s: none in %v; got %s", what, timeout, b.summary())
		}
	}
}

// reply waits for the event of kind about message id.
func (b *sseInbox) reply(kind contract.EventKind, id string) sseEvent {
	b.t.Helper()
	return b.await(fmt.Sprintf("%s event of %s", kind, id), 30*time.Second, func(ev sseEvent) bool {
		return ev.Kind == string(kind) && ev.Event.JobID == id
	})
}

// state waits for the user's move to state.
func (b *sseInbox) state(to string) sseEvent {
	b.t.Helper()
	return b.await("state event to "+to, 30*time.Second, func(ev sseEvent) bool {
		return ev.Kind == string(contract.KindState) && ev.Event.To == to
	})
}

func (b *sseInbox) summary() string {
	var s []string
	for _, ev := range b.seen {
		s = append(s, fmt.Sprintf("%s %s %q", ev.Kind, ev.Event.JobID, ev.Event.Text+ev.Event.To))
	}
	return strings.Join(s, "; ")
}

// procAlive reports whether pid is a live (not zombie) process named one
// of names: a reused pid or a zombie nobody reaped is gone.
func procAlive(pid int, names ...string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open || closing+2 >= len(s) {
		return false
	}
	state := s[closing+2]
	return slices.Contains(names, s[open+1:closing]) && state != 'Z' && state != 'X'
}

// natsJS connects to the instance's NATS as the operator's `nats` CLI
// would, as admin.
func natsJS(t *testing.T, inst *instance) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(inst.adminURL(t))
	if err != nil {
		t.Fatalf("connect to textslash's NATS: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// userDoneIDs are the job ids of every done event of u in EVENTS, in order.
func userDoneIDs(t *testing.T, js jetstream.JetStream, u contract.User) []string {
	t.Helper()
	ctx := t.Context()
	st, err := js.Stream(ctx, contract.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for seq := uint64(1); ; {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(contract.EventSubject(u, contract.KindDone)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return ids
		}
		if err != nil {
			t.Fatalf("read done events: %v", err)
		}
		var ev contract.Event
		if err := contract.Decode(m.Data, &ev); err != nil {
			t.Fatalf("done event: %v", err)
		}
		ids = append(ids, ev.JobID)
		seq = m.Sequence + 1
	}
}

// Cancel stops the whole process tree of the run at once and drops the
// messages waiting behind it.
func TestCancelStopsRunFast(t *testing.T) {
	dir := sharedDir(t)
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_SANDBOX_SHARE="+dir)
	js := natsJS(t, inst)
	c := inst.newChat(t)
	box := newInbox(t, c)
	pidFile := filepath.Join(dir, "pids")

	// The run's processes, found on the host by their command lines (the
	// pids the run sees are its sandbox's own).
	id := c.send(fmt.Sprintf(`sleep 3001 & sleep 3002 & touch %s; wait`, pidFile))
	box.reply(contract.KindStarted, id)
	var pids []int
	natstest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if _, err := os.Stat(pidFile); err != nil {
			return err
		}
		out, _ := exec.Command("pgrep", "-f", "sleep 300[12]").Output()
		pids = pids[:0]
		for _, f := range strings.Fields(string(out)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("pgrep %q: %v", out, err)
			}
			pids = append(pids, pid)
		}
		if len(pids) < 3 { // bash -c and the two sleeps
			return fmt.Errorf("pgrep found %v", pids)
		}
		return nil
	})
	alive := func() []int {
		var out []int
		for _, pid := range pids {
			if procAlive(pid, "bash", "sleep", "bwrap", "nsenter") { // nsenter: a run's program entering its home
				out = append(out, pid)
			}
		}
		return out
	}
	if got := alive(); len(got) != len(pids) {
		t.Fatalf("processes of the run alive before cancel: got %v of %v; want all", got, pids)
	}

	// Two messages wait behind the run.
	var waiting []string
	for i, q := range []string{"q1", "q2"} {
		qid := c.send("touch " + filepath.Join(dir, q))
		want := []string{"Got it, I'll process this next.", "Got it. You're 2nd in line."}[i]
		if n := box.reply(contract.KindNotice, qid); n.Event.Text != want {
			t.Errorf("notice of waiting message %s: got %q; want %q", q, n.Event.Text, want)
		}
		waiting = append(waiting, qid)
	}

	sent := time.Now()
	cid := c.send("cancel")
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if left := alive(); len(left) > 0 {
			return fmt.Errorf("processes %v of the run (%v) still alive after cancel", left, pids)
		}
		return nil
	})
	t.Logf("the run's %d processes were gone %v after cancel was sent", len(pids), time.Since(sent).Round(time.Millisecond))
	if n := box.reply(contract.KindNotice, cid); !strings.HasPrefix(n.Event.Text, "Cancelled.") {
		t.Errorf("notice of cancel: got %q; want it to start with %q", n.Event.Text, "Cancelled.")
	}
	done := box.reply(contract.KindDone, id)
	// It had printed nothing: the notice above is the one line about it.
	if done.Event.Status != contract.StatusCanceled || done.Event.Text != "" {
		t.Errorf("done of the cancelled run: got status %q text %q; want %q, no text",
			done.Event.Status, done.Event.Text, contract.StatusCanceled)
	}

	// The next message runs; the cancelled ones never do.
	next := c.send("echo after")
	if d := box.reply(contract.KindDone, next); d.Event.Text != "after" || d.Event.Status != contract.StatusOK {
		t.Errorf("reply after cancel: got %q (%s); want %q (ok)", d.Event.Text, d.Event.Status, "after")
	}
	if got, want := userDoneIDs(t, js, c.User), []string{id, next}; !slices.Equal(got, want) {
		t.Errorf("done events in EVENTS: got %q; want %q (the waiting %q never ran)", got, want, waiting)
	}
	for _, ev := range box.seen {
		if ev.Kind == string(contract.KindDone) && slices.Contains(waiting, ev.Event.JobID) {
			t.Errorf("done of cancelled waiting message %s: got %q; want none", ev.Event.JobID, ev.Event.Text)
		}
	}
	for _, q := range []string{"q1", "q2"} {
		if _, err := os.Stat(filepath.Join(dir, q)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("file %s of a cancelled waiting message: got %v; want it never made", q, err)
		}
	}
}

func TestStatusAndHelpOverWebChat(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	c := inst.newChat(t)
	box := newInbox(t, c)

	help := box.reply(contract.KindNotice, c.send("help")).Event.Text
	for _, kw := range []string{"status", "cancel", "approve", "reject", "more", "new"} {
		if !strings.Contains(help, kw) {
			t.Errorf("help: got %q; want it to name %q", help, kw)
		}
	}
	if got := box.reply(contract.KindNotice, c.send("status")).Event.Text; !strings.HasPrefix(got, "Idle") {
		t.Errorf("status while idle: got %q; want it to start with %q", got, "Idle")
	}

	id := c.send("sleep 3")
	box.reply(contract.KindStarted, id)
	got := box.reply(contract.KindNotice, c.send("Status")).Event.Text
	if !strings.HasPrefix(got, "Working") || !strings.Contains(got, "sleep 3") {
		t.Errorf("status while sleep 3 runs: got %q; want it to start with %q and name %q", got, "Working", "sleep 3")
	}
	if got := box.reply(contract.KindNotice, c.send("more")).Event.Text; got != webchat.MsgNoMorePages {
		t.Errorf("more: got %q; want %q", got, webchat.MsgNoMorePages)
	}
	if d := box.reply(contract.KindDone, id); d.Event.Status != contract.StatusOK {
		t.Errorf("done of sleep 3: got status %q; want ok (status and more must not disturb the run)", d.Event.Status)
	}
	for _, ev := range box.seen {
		if ev.Kind == string(contract.KindDone) && ev.Event.JobID != id {
			t.Errorf("done of %s %q: got one; want keywords never to run as messages", ev.Event.JobID, ev.Event.Text)
		}
	}
}

// The real runner carries out approve and reject in the user's git
// workspace. The runner never asks for approval itself yet, so the test
// asks in its place: while the agent's run waits (on a file the test makes
// later) with its changes made, the test publishes the run's done event
// with Approval, as a runner would; the runner's own done, published when
// the run ends, is then a duplicate of it and dropped by JetStream.
func TestApproveRejectInGitWorkspace(t *testing.T) {
	tests := []struct {
		keyword, notice string
		reply           func(id string) string
		check           func(t *testing.T, git func(...string) string, ws, id, initial string)
	}{
		{
			keyword: "approve",
			notice:  "Approved.",
			reply: func(id string) string {
				return fmt.Sprintf("Committed the changes to 2 files on branch textslash/%s.", id[:12])
			},
			check: func(t *testing.T, git func(...string) string, ws, id, initial string) {
				if got, want := git("branch", "--show-current"), "textslash/"+id[:12]; got != want {
					t.Errorf("branch after approve: got %q; want %q", got, want)
				}
				if got, want := git("show", "--name-only", "--format=", "HEAD"), "kept.txt\nnew.txt"; got != want {
					t.Errorf("files of the approved commit: got %q; want %q", got, want)
				}
				if got := git("rev-parse", "HEAD~1"); got != initial {
					t.Errorf("parent of the approved commit: got %s; want the initial commit %s", got, initial)
				}
			},
		},
		{
			keyword: "reject",
			notice:  "Rejected.",
			reply:   func(string) string { return "Discarded the changes to 2 files." },
			check: func(t *testing.T, git func(...string) string, ws, id, initial string) {
				if got := git("rev-parse", "HEAD"); got != initial {
					t.Errorf("HEAD after reject: got %s; want the initial commit %s", got, initial)
				}
				if got, want := git("branch", "--show-current"), "main"; got != want {
					t.Errorf("branch after reject: got %q; want %q", got, want)
				}
				if data, err := os.ReadFile(filepath.Join(ws, "kept.txt")); err != nil || string(data) != "a\n" {
					t.Errorf("kept.txt after reject: got %q (%v); want %q", data, err, "a\n")
				}
				if _, err := os.Stat(filepath.Join(ws, "new.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("new.txt after reject: got %v; want it removed", err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.keyword, func(t *testing.T) {
			gates := sharedDir(t)
			inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_SANDBOX_SHARE="+gates)
			js := natsJS(t, inst)
			c := inst.newChat(t)
			box := newInbox(t, c)
			u := c.User
			ws := filepath.Join(inst.Data, "workspaces", u.Key())
			git := func(args ...string) string {
				t.Helper()
				// The workspace is the agent's: safe to read as root.
				out, err := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", ws}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				return strings.TrimSpace(string(out))
			}

			// Nothing waits for approval yet.
			for _, kw := range []string{"approve", "reject"} {
				if got := box.reply(contract.KindNotice, c.send(kw)).Event.Text; got != "Nothing is waiting for your approval." {
					t.Errorf("%s with nothing to approve: got %q; want %q", kw, got, "Nothing is waiting for your approval.")
				}
			}

			setup := c.send("git init -q -b main && echo a > kept.txt && git add kept.txt && " +
				"git -c user.name=t -c user.email=t@t commit -q -m init && echo committed")
			if d := box.reply(contract.KindDone, setup); d.Event.Text != "committed" {
				t.Fatalf("making the workspace a git repository: got %q; want %q", d.Event.Text, "committed")
			}
			initial := git("rev-parse", "HEAD")

			gate := filepath.Join(gates, "gate")
			run := c.send(fmt.Sprintf("echo b >> kept.txt && echo x > new.txt && while [ ! -e %s ]; do sleep 0.05; done", gate))
			box.reply(contract.KindStarted, run)
			natstest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
				_, err := os.Stat(filepath.Join(ws, "new.txt"))
				return err
			})
			ask := contract.Event{Kind: contract.KindDone, User: u, JobID: run, Status: contract.StatusOK,
				Text: "Changed 2 files. Reply approve or reject.", Approval: true}
			if err := bus.PublishEvent(t.Context(), js, ask, contract.MsgID(u, run, "done")); err != nil {
				t.Fatal(err)
			}
			if st := box.state(contract.StateAwaitingApproval); st.Event.JobID != run {
				t.Errorf("awaiting approval of: got %q; want %q", st.Event.JobID, run)
			}
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Fatal(err)
			}

			answer := c.send(tt.keyword)
			if got := box.reply(contract.KindNotice, answer).Event.Text; !strings.HasPrefix(got, tt.notice) {
				t.Errorf("%s: got notice %q; want it to start with %q", tt.keyword, got, tt.notice)
			}
			d := box.reply(contract.KindDone, answer)
			// approve adds why no pull request was opened (no gh here).
			if want := tt.reply(answer); !strings.HasPrefix(d.Event.Text, want) || d.Event.Status != contract.StatusOK {
				t.Errorf("reply to %s: got %q (%s); want it to start with %q (ok)", tt.keyword, d.Event.Text, d.Event.Status, want)
			}
			box.await("state event to idle after "+tt.keyword, 30*time.Second, func(ev sseEvent) bool {
				return ev.Kind == string(contract.KindState) && ev.Event.To == contract.StateIdle && ev.Event.JobID == answer
			})
			if got := git("status", "--porcelain"); got != "" {
				t.Errorf("git status after %s: got %q; want clean", tt.keyword, got)
			}
			tt.check(t, git, ws, answer, initial)
			if got, want := userDoneIDs(t, js, u), []string{setup, run, answer}; !slices.Equal(got, want) {
				t.Errorf("done events: got %q; want %q", got, want)
			}
		})
	}
}

// A run cancelled while it waits for the user's previous run to stop (one
// that is itself being cancelled, and slow to die) must not run after all.
// Only an unconfined run can be slow to die (a sandbox ends at once, its
// pid namespace with it): the sandbox is off here.
func TestCancelWhilePreviousRunStops(t *testing.T) {
	dir := sharedDir(t)
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_SANDBOX=off")
	js := natsJS(t, inst)
	jobs, err := js.Consumer(t.Context(), contract.StreamJobs, contract.ConsumerRunner)
	if err != nil {
		t.Fatal(err)
	}
	c := inst.newChat(t)
	box := newInbox(t, c)

	// The first run ignores SIGTERM: it dies only at the runner's SIGKILL.
	ready := filepath.Join(dir, "first-ready")
	slow := c.send("trap '' TERM; touch " + ready + "; sleep 300")
	natstest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error { _, err := os.Stat(ready); return err })
	box.reply(contract.KindNotice, c.send("cancel"))
	marker := filepath.Join(dir, "second-ran")
	second := c.send("touch " + marker + "; echo second ran")
	// The runner has taken the second job (and is waiting for the first run
	// to end) when both jobs are unacknowledged.
	natstest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		info, err := jobs.Info(t.Context())
		if err != nil {
			return err
		}
		if info.NumAckPending != 2 {
			return fmt.Errorf("jobs unacknowledged: got %d; want 2", info.NumAckPending)
		}
		return nil
	})
	if n := box.reply(contract.KindNotice, c.send("cancel")); !strings.HasPrefix(n.Event.Text, "Cancelled.") {
		t.Errorf("second cancel: got %q; want it to start with %q", n.Event.Text, "Cancelled.")
	}
	if d := box.reply(contract.KindDone, slow); d.Event.Status != contract.StatusCanceled {
		t.Errorf("done of the first run: got status %q; want %q", d.Event.Status, contract.StatusCanceled)
	}

	// The runner runs one job of a user at a time: once the next message
	// has its reply, the second is settled one way or another.
	after := c.send("echo after")
	box.reply(contract.KindDone, after)
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cancelled second message ran (its file: %v); want it never run", err)
	}
	for _, ev := range box.seen {
		if ev.Kind == string(contract.KindDone) && ev.Event.JobID == second && ev.Event.Status != contract.StatusCanceled {
			t.Errorf("done of the cancelled second message: got %q (%s); want none, or status canceled",
				ev.Event.Text, ev.Event.Status)
		}
	}
}
