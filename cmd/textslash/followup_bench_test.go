package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
)

// How many people each round of BenchmarkFollowUp has, and how many
// follow-ups each of them sends after their first message.
const (
	followUpPeople = 3
	followUpsEach  = 10
	// followUpIdle is how long the CPU of the tree is measured after the
	// follow-ups, with nobody writing; then, after a second more, as long
	// again: the warm CLIs are stopped by then (runner/agent's idlePause,
	// 10 s).
	followUpIdle = 10 * time.Second
)

// BenchmarkFollowUp: a person's follow-up message with the real Claude
// Code CLI against the scripted model (mode auto, a reply that needs no
// tool), through the all-in-one. Each round has followUpPeople people: each
// sends a first message (cold: their home, if any, is made and its CLI
// started), then followUpsEach follow-ups, one at a time, each sent once
// the one before is answered and the person is idle again. A message is
// timed from its web chat POST to the model receiving its request
// (claudetest.Request.At). Reports followup-p50-ms, followup-p90-ms,
// first-p50-ms and cpu-ms/followup: the CPU of textslash's whole process
// tree (textslash, bubblewrap, nsenter, slirp4netns, the CLI and anything
// they ran; those that exited count through their parents' cutime/cstime)
// over the follow-ups, divided by their number (procTree: those orphaned
// count too); the model is in the test process and not counted. Also
// textslash-cpu-ms/followup, the Go process's own share of it, and
// idle-cpu-ms/s, the tree's CPU per second for followUpIdle after the
// follow-ups, nobody writing (with homes: followUpPeople warm CLIs idling),
// and paused-cpu-ms/s, the same over the next followUpIdle, a second
// later, once the idle CLIs are stopped; then each person writes once
// more: after-pause-p50-ms, the follow-up that continues a stopped CLI.
//
// "homes": homes kept (root), each follow-up a message on the person's
// warm CLI; "homes-normal-user" the same with textslash run as a normal
// user (the tests' agent user); the benchmark fails when the serve log does not say homes are
// kept or a CLI was started more than once per home, and logs why (the
// runner's "does not fit the run" lines). "homes-off": TEXTSLASH_HOMES_MAX=-1,
// a sandbox and a CLI resuming the session per message: the numbers before
// homes.
//
//	go test -run '^$' -bench FollowUp -benchtime 1x ./cmd/textslash/
func BenchmarkFollowUp(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: as root, and to run textslash as a normal user")
	}
	b.Run("homes", func(b *testing.B) { benchFollowUps(b, true, "") })
	b.Run("homes-normal-user", func(b *testing.B) { benchFollowUps(b, true, claudetest.AgentUser(b)) })
	b.Run("homes-off", func(b *testing.B) { benchFollowUps(b, false, "") })
}

// benchFollowUps is BenchmarkFollowUp with homes or not, textslash run as
// the OS user as ("": this process's).
func benchFollowUps(b *testing.B, homes bool, as string) {
	turns := make([]claudetest.Turn, b.N*followUpPeople*(2+followUpsEach)) // the first, the follow-ups, the one after a pause
	for i := range turns {
		turns[i] = claudetest.Text("ok " + strconv.Itoa(i))
	}
	model := claudetest.NewModel(b, turns...)
	m := scripted{turns: model.Turns, at: func(turn int) (time.Time, bool) {
		for _, r := range model.MainRequests() {
			if r.Turn == turn {
				return r.At, true
			}
		}
		return time.Time{}, false
	}}
	env := []string{"TEXTSLASH_LOG_LEVEL=info"}
	if !homes {
		env = append(env, "TEXTSLASH_HOMES_MAX=-1")
	}
	tree := newProcTree(b)
	inst := startClaudeAs(b, as, model, env...)
	tree.root = inst.cmd.Process.Pid
	checkHomes(b, inst, homes)
	followUps(b, inst, tree, m, homes)
	if homes {
		checkWarm(b, inst, b.N*followUpPeople)
	}
}

// followUps runs BenchmarkFollowUp's rounds on inst, whose agent m
// scripts, and reports its numbers; tree is inst's process tree.
func followUps(b *testing.B, inst *instance, tree *procTree, m scripted, homes bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var first, follow, woken []time.Duration
	var cpu, own, idle, paused time.Duration
	for range b.N {
		people := make([]*followUpPerson, followUpPeople)
		for i := range people {
			c := inst.newChat(b)
			people[i] = &followUpPerson{chat: c, events: c.events(ctx), model: m}
			first = append(first, people[i].message("hello, this is my first message"))
		}
		before, ownBefore := tree.cpu(), tree.own()
		for _, p := range people {
			for i := range followUpsEach {
				follow = append(follow, p.message(fmt.Sprintf("follow-up %d", i)))
			}
		}
		after := tree.cpu()
		cpu += after - before
		own += tree.own() - ownBefore
		time.Sleep(followUpIdle) // the people's homes kept, nobody writing
		idle += tree.cpu() - after
		time.Sleep(time.Second)
		before = tree.cpu()
		time.Sleep(followUpIdle)
		paused += tree.cpu() - before
		for _, p := range people {
			woken = append(woken, p.message("after a pause"))
		}
	}
	slices.Sort(first)
	slices.Sort(follow)
	b.ReportMetric(ms(follow[len(follow)/2]), "followup-p50-ms")
	b.ReportMetric(ms(follow[len(follow)*9/10]), "followup-p90-ms")
	b.ReportMetric(ms(first[len(first)/2]), "first-p50-ms")
	slices.Sort(woken)
	b.ReportMetric(ms(woken[len(woken)/2]), "after-pause-p50-ms")
	b.ReportMetric(ms(cpu)/float64(len(follow)), "cpu-ms/followup")
	b.ReportMetric(ms(own)/float64(len(follow)), "textslash-cpu-ms/followup")
	b.ReportMetric(ms(idle)/(float64(b.N)*followUpIdle.Seconds()), "idle-cpu-ms/s")
	b.ReportMetric(ms(paused)/(float64(b.N)*followUpIdle.Seconds()), "paused-cpu-ms/s")
	if homes {
		// What one idle warm CLI (and its home) costs in an hour.
		perHour := idle.Seconds() / (float64(b.N) * followUpIdle.Seconds()) * 3600 / followUpPeople
		b.ReportMetric(perHour, "idle-cpu-s/h/warm-cli")
		b.ReportMetric(ms(paused)/1000/(float64(b.N)*followUpIdle.Seconds())*3600/followUpPeople, "paused-cpu-s/h/warm-cli")
	}
}

// followUpPerson is one person of BenchmarkFollowUp, on the web chat.
type followUpPerson struct {
	chat   *chat
	events <-chan sseEvent
	model  scripted
}

// scripted is a scripted model API as followUpPerson reads it: how many
// turns it answered, and when the request of a turn arrived.
type scripted struct {
	turns func() int
	at    func(turn int) (time.Time, bool)
}

// message sends text and waits for its reply and for the person to be
// idle again; it returns the time from the POST to the model receiving
// the run's request.
func (p *followUpPerson) message(text string) time.Duration {
	t := p.chat.t
	t.Helper()
	turn := p.model.turns() // the turn the run's request takes: one at a time
	start := time.Now()
	id := p.chat.send(text)
	done := waitFor(t, p.events, 90*time.Second, func(ev sseEvent) bool {
		return ev.Kind == string(contract.KindDone) && ev.Event.JobID == id
	}).Event
	if want := "ok " + strconv.Itoa(turn); done.Status != contract.StatusOK || done.Text != want {
		t.Fatalf("reply to %q: %q (%s); want %q", text, done.Text, done.Status, want)
	}
	waitFor(t, p.events, 30*time.Second, func(ev sseEvent) bool {
		return ev.Kind == string(contract.KindState) && ev.Event.To == contract.StateIdle
	})
	if at, ok := p.model.at(turn); ok {
		return at.Sub(start)
	}
	t.Fatalf("no request of the model for turn %d", turn)
	return 0
}

// checkHomes fails b unless the serve log says homes are kept (homes) or
// off (not homes).
func checkHomes(b *testing.B, inst *instance, homes bool) {
	b.Helper()
	want := "homes off: each run has a sandbox of its own"
	if homes {
		want = "homes kept: "
	}
	if lines := logLines(b, inst, want); len(lines) == 0 {
		b.Fatalf("the serve log does not say %q; homes: %q", want, logLines(b, inst, "homes"))
	}
}

// checkWarm fails b unless the runner started a warm CLI once per home
// (homes of them), logging what it said about the others.
func checkWarm(b *testing.B, inst *instance, homes int) {
	b.Helper()
	checkStarts(b, logLines(b, inst, "claude: started a warm CLI"), homes, inst, "warm CLI")
}

// checkStarts fails b unless starts, the log's lines of a warm agent
// started, are one per home, logging the lines about it (about).
func checkStarts(b *testing.B, starts []string, homes int, inst *instance, about string) {
	b.Helper()
	b.ReportMetric(float64(len(starts))/float64(homes), "cli-starts/home")
	if len(starts) == homes {
		return
	}
	for _, l := range logLines(b, inst, about) {
		b.Log(l)
	}
	b.Errorf("%d warm CLIs started for %d homes; want one each (follow-ups not warm: the lines above say why)", len(starts), homes)
}

// logLines are the lines of inst's log that contain s.
func logLines(b testing.TB, inst *instance, s string) []string {
	b.Helper()
	out, err := os.ReadFile(inst.Log)
	if err != nil {
		b.Fatal(err)
	}
	var lines []string
	for l := range bytes.Lines(out) {
		if bytes.Contains(l, []byte(s)) {
			lines = append(lines, strings.TrimSpace(string(l)))
		}
	}
	return lines
}

// procTree is textslash's process tree, for its CPU time. A process of
// the tree whose parent exits before it does is adopted by the test
// process, a child subreaper while BenchmarkFollowUp runs (bubblewrap's
// outer process can exit before its inner one, whose CPU, the CLI's
// included, would otherwise go to init with it); such processes are in
// the tree too. The adopted are reaped when the instance has stopped.
type procTree struct {
	self, root int
	// before are the test process's children before textslash started.
	before map[int]bool
}

// newProcTree makes the test process a child subreaper for b's duration
// and notes its children, before textslash starts; its root is set once
// textslash has.
func newProcTree(b *testing.B) *procTree {
	b.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		b.Fatalf("prctl PR_SET_CHILD_SUBREAPER: %v", err)
	}
	pt := &procTree{self: os.Getpid(), before: map[int]bool{}}
	for pid, p := range procs() {
		if p.ppid == pt.self {
			pt.before[pid] = true
		}
	}
	// Registered before the instance's own cleanup, so run after it.
	b.Cleanup(func() {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		pt.reap(b)
	})
	return pt
}

// in reports whether pid is in the tree.
func (pt *procTree) in(ps map[int]procStat, pid int) bool {
	for q := pid; q > 1 && q != pt.self; q = ps[q].ppid {
		if q == pt.root || (ps[q].ppid == pt.self && !pt.before[q]) {
			return true
		}
	}
	return false
}

// cpu is the CPU time of every process in the tree, from
// /proc/<pid>/stat: utime+stime, and cutime+cstime for the children each
// has reaped (a CLI per message, a run's tools), so a process that ran
// and exited inside the tree still counts; an exited process not yet
// reaped (a zombie) still tells its own.
func (pt *procTree) cpu() time.Duration {
	ps := procs()
	var ticks int64
	for pid, p := range ps {
		if pt.in(ps, pid) {
			ticks += p.ticks
		}
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}

// pss is the memory the processes of the tree hold: the sum of their
// proportional set sizes (/proc/<pid>/smaps_rollup), in which a page
// several processes share (the CLI's 380 MB binary, mapped by each) counts
// a share for each, so that it is counted once in all; resident sets would
// count it once per process.
func (pt *procTree) pss() int64 {
	ps := procs()
	var sum int64
	for pid := range ps {
		if !pt.in(ps, pid) {
			continue
		}
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				sum += kb << 10
			}
		}
	}
	return sum
}

// samplePSS samples the memory the tree holds (pss) at each interval
// until ctx ends, then sends the highest it saw.
func (pt *procTree) samplePSS(ctx context.Context, interval time.Duration) <-chan int64 {
	top := make(chan int64, 1)
	go func() {
		var high int64
		for {
			high = max(high, pt.pss())
			select {
			case <-ctx.Done():
				top <- high
				return
			case <-time.After(interval):
			}
		}
	}()
	return top
}

// own is the CPU time of textslash alone: its utime+stime, without the
// children it reaped.
func (pt *procTree) own() time.Duration {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pt.root))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	var ticks int64
	for _, v := range f[11:13] {
		n, _ := strconv.ParseInt(v, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}

// reap waits for the adopted processes that exited, and logs those still
// running after textslash stopped. Homes' processes end as textslash's
// end reaches them (bubblewrap dies with its parent, slirp4netns with its
// exit pipe): with hundreds of homes that takes a few seconds, during
// which the exiting have already lost their command line.
func (pt *procTree) reap(b *testing.B) {
	var left map[int]string
	for deadline := time.Now().Add(reapWait); ; time.Sleep(50 * time.Millisecond) {
		left = map[int]string{}
		for pid, p := range procs() {
			if p.ppid != pt.self || pt.before[pid] || pid == pt.root {
				continue
			}
			if p.state == "Z" {
				_, _ = unix.Wait4(pid, nil, unix.WNOHANG, nil)
				continue
			}
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			left[pid] = string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for pid, cmd := range left {
		b.Logf("still running %s after textslash stopped: pid %d: %s", reapWait, pid, cmd)
	}
}

// reapWait is how long reap lets the adopted processes end.
const reapWait = 10 * time.Second

// procStat is a process as /proc/<pid>/stat tells of it.
type procStat struct {
	ppid  int
	state string
	// ticks is utime+stime+cutime+cstime, in clock ticks.
	ticks int64
}

// procs are the processes, by pid.
func procs() map[int]procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	ps := map[int]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After "(comm)": state ppid … utime(14) stime cutime cstime.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 15 {
			continue
		}
		p := procStat{state: f[0]}
		p.ppid, _ = strconv.Atoi(f[1])
		for _, v := range f[11:15] {
			n, _ := strconv.ParseInt(v, 10, 64)
			p.ticks += n
		}
		ps[pid] = p
	}
	return ps
}
