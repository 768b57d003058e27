package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
)

// warmRun runs text on w as a follow-up of session, in r's workspace.
func warmRun(t *testing.T, bin string, r *Run, w *Warm, text, session string) (Result, error) {
	t.Helper()
	f := *r
	f.Job.Text, f.SessionID, f.Warm = text, session, w
	ctx, cancel := context.WithTimeout(testLog(t), claudeTimeout)
	defer cancel()
	return (&Claude{Bin: bin}).Run(ctx, &f)
}

// testLog is the test's context with a logger writing to the test's log.
func testLog(t *testing.T) context.Context {
	return zerolog.New(zerolog.NewTestWriter(t)).WithContext(t.Context())
}

// newWarm is a Warm closed when the test ends.
func newWarm(t *testing.T) *Warm {
	w := &Warm{}
	t.Cleanup(w.Close)
	return w
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	s := procState(pid)
	return s != "" && s != "Z" && s != "X"
}

// modelTokens is what the stand-in's answers to Messages requests from
// index from on add up to.
func modelTokens(m *claudetest.Model, from int) (in, out, n int) {
	for _, rq := range m.Requests()[from:] {
		if rq.Method == "POST" && rq.Path == "/v1/messages" {
			n++
		}
	}
	return n * claudetest.InputTokens, n * claudetest.OutputTokens, n
}

// Each turn of a warm CLI counts what the model did in it alone, from
// what the CLI says since its last result or, from a CLI that does not
// say, from its running totals less the previous turn's.
func TestWarmStreamCountsEachTurn(t *testing.T) {
	const (
		first     = `{"type":"result","subtype":"success","result":"a","session_id":"s1","total_cost_usd":0.00028,"modelUsage":{"m":{"inputTokens":20,"outputTokens":10,"costUSD":0.00028}},"model_usage_since_last_result":{"m":{"inputTokens":20,"outputTokens":10,"costUSD":0.00028}}}`
		second    = `{"type":"result","subtype":"success","result":"b","session_id":"s1","total_cost_usd":0.00042,"modelUsage":{"m":{"inputTokens":30,"outputTokens":15,"costUSD":0.00042}},"model_usage_since_last_result":{"m":{"inputTokens":10,"outputTokens":5,"costUSD":0.00014}}}`
		firstOld  = `{"type":"result","subtype":"success","result":"a","session_id":"s1","total_cost_usd":0.00028,"modelUsage":{"m":{"inputTokens":20,"outputTokens":10}}}`
		secondOld = `{"type":"result","subtype":"success","result":"b","session_id":"s1","total_cost_usd":0.00042,"modelUsage":{"m":{"inputTokens":30,"outputTokens":15}}}`
	)
	for _, c := range []struct {
		name          string
		resumed       string
		kept          *Usage // the session's total at its last result, if kept
		first, second string
		want1, want2  Usage
	}{
		{"new session", "", nil, first, second, Usage{USD: 0.00028, In: 20, Out: 10}, Usage{USD: 0.00014, In: 10, Out: 5}},
		{"new session, older CLI", "", nil, firstOld, secondOld, Usage{USD: 0.00028, In: 20, Out: 10}, Usage{USD: 0.00014, In: 10, Out: 5}},
		{"resumed", "s0", nil, first, second, Usage{USD: 0.00028, In: 20, Out: 10}, Usage{USD: 0.00014, In: 10, Out: 5}},
		// The first turn of a resumed session cannot tell its part from
		// the earlier runs'; the second can.
		{"resumed, older CLI", "s0", nil, firstOld, secondOld, Usage{}, Usage{USD: 0.00014, In: 10, Out: 5}},
		// Unless the session's total at its last result was kept.
		{"resumed, older CLI, total kept", "s0", &Usage{}, firstOld, secondOld, Usage{USD: 0.00028, In: 20, Out: 10}, Usage{USD: 0.00014, In: 10, Out: 5}},
	} {
		p := &claudeProc{resumed: c.resumed}
		p.last, p.unknown = sessionTotal(&Run{SessionTotal: c.kept}, c.resumed) // as startProc does
		for i, turn := range []struct {
			line string
			want Usage
		}{{c.first, c.want1}, {c.second, c.want2}} {
			st := p.stream(&Run{OutputCap: 1000})
			st.handle(t.Context(), []byte(turn.line))
			p.keep(st)
			res := st.result()
			got := Usage{USD: res.CostUSD, In: res.InputTokens, Out: res.OutputTokens}
			if d := got.minus(turn.want); d.In != 0 || d.Out != 0 || math.Abs(d.USD) > 1e-12 {
				t.Errorf("%s, turn %d: counted %+v; want %+v", c.name, i+1, got, turn.want)
			}
		}
		if p.session != "s1" || math.Abs(p.spent-c.want1.USD-c.want2.USD) > 1e-12 {
			t.Errorf("%s: process holds session %q, spent $%v; want s1, $%v", c.name, p.session, p.spent, c.want1.USD+c.want2.USD)
		}
	}
}

// A follow-up on a Warm is served by the same live CLI: the model sees it
// carry the first turn, and each run reports its own reply and cost.
func TestWarmServesFollowUp(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t, claudetest.Text("First reply."), claudetest.Text("Second reply."))
	claudetest.Setenv(t, m)
	r, _ := claudeRun(t, "")
	w := newWarm(t)

	res1, err := warmRun(t, bin, r, w, "first question", "")
	if err != nil || res1.Text != "First reply." || res1.Warm {
		t.Fatalf("first run: %+v, %v; want First reply., not warm", res1, err)
	}
	pid := w.pid()
	if pid == 0 || !alive(pid) {
		t.Fatalf("after the first run the CLI (pid %d) is not running; want it kept", pid)
	}
	n1 := len(m.Requests())

	res2, err := warmRun(t, bin, r, w, "second question", res1.SessionID)
	if err != nil || res2.Text != "Second reply." {
		t.Fatalf("second run: %+v, %v; want Second reply.", res2, err)
	}
	if !res2.Warm || w.pid() != pid {
		t.Errorf("second run warm %t on pid %d; want warm on the first run's CLI %d", res2.Warm, w.pid(), pid)
	}
	if res2.SessionID != res1.SessionID {
		t.Errorf("session %q then %q; want the same", res1.SessionID, res2.SessionID)
	}
	main := m.MainRequests()
	if len(main) != 2 {
		t.Fatalf("model got %d main requests; want 2", len(main))
	}
	var said []string
	for _, msg := range main[1].Messages {
		for _, b := range msg.Content {
			said = append(said, msg.Role+": "+b.Text)
		}
	}
	joined := strings.Join(said, "\n")
	for _, want := range []string{"first question", "First reply.", "second question"} {
		if !strings.Contains(joined, want) {
			t.Errorf("second request's messages %q lack %q", said, want)
		}
	}
	in, out, n := modelTokens(m, n1)
	t.Logf("first run: $%v %d in %d out; second: $%v %d in %d out (%d requests)", res1.CostUSD, res1.InputTokens, res1.OutputTokens, res2.CostUSD, res2.InputTokens, res2.OutputTokens, n)
	if res2.InputTokens != in || res2.OutputTokens != out || res2.CostUSD <= 0 {
		t.Errorf("second run counted %d in, %d out, $%v; want its own %d in, %d out, a cost", res2.InputTokens, res2.OutputTokens, res2.CostUSD, in, out)
	}
	w.Close()
	natstest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if alive(pid) {
			return errors.New("the CLI still runs after Close")
		}
		return nil
	})
}

// A run the live CLI does not fit starts a new one (continuing the
// session with --resume), and the old one is ended.
func TestWarmRestarts(t *testing.T) {
	bin := claudetest.Binary(t)
	budget := func(left float64) *contract.Budget { return &contract.Budget{LeftUSD: left, Of: "your daily budget"} }
	tests := []struct {
		name   string
		first  *contract.Budget
		change func(r *Run, session *string, spent float64)
		warm   bool
	}{
		{"same", nil, func(*Run, *string, float64) {}, true},
		{"mode", nil, func(r *Run, _ *string, _ float64) { r.Job.Mode = contract.ModeAsk }, false},
		{"new session", nil, func(_ *Run, s *string, _ float64) { *s = "" }, false},
		{"other session", nil, func(_ *Run, s *string, _ float64) { *s = "4f1c2b8e-0000-4000-8000-000000000000" }, false},
		{"budget left is what the CLI has left", budget(5), func(r *Run, _ *string, spent float64) { r.Job.Budget = budget(5 - spent) }, true},
		{"budget left unchanged though the CLI spent", budget(5), func(*Run, *string, float64) {}, false},
		{"budget set", nil, func(r *Run, _ *string, _ float64) { r.Job.Budget = budget(5) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := claudetest.NewModel(t, claudetest.Text("One."), claudetest.Text("Two."))
			claudetest.Setenv(t, m)
			r, _ := claudeRun(t, "")
			r.Job.Budget = tt.first
			w := newWarm(t)
			res1, err := warmRun(t, bin, r, w, "one", "")
			if err != nil {
				t.Fatalf("first run: %v", err)
			}
			pid := w.pid()
			session := res1.SessionID
			next := *r
			tt.change(&next, &session, res1.CostUSD)
			res2, err := warmRun(t, bin, &next, w, "two", session)
			if err != nil || res2.Text != "Two." {
				t.Fatalf("second run: %+v, %v; want Two.", res2, err)
			}
			if res2.Warm != tt.warm || (w.pid() == pid) != tt.warm {
				t.Errorf("second run warm %t, pid %d after %d; want warm %t", res2.Warm, w.pid(), pid, tt.warm)
			}
			if !tt.warm && alive(pid) {
				t.Errorf("the first CLI (pid %d) still runs after the restart", pid)
			}
		})
	}
}

// Cancelling a warm run during a tool ends the tool, and the next run
// still works: on the same CLI when it honoured the interrupt.
func TestWarmCancelDuringTool(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t,
		claudetest.Text("Ready."),
		claudetest.ToolUse("Bash", map[string]string{"command": "echo $$ > tool.pid; exec sleep 30", "description": "wait"}),
		claudetest.Text("Still here."),
	)
	claudetest.Setenv(t, m)
	r, _ := claudeRun(t, "")
	w := newWarm(t)
	res1, err := warmRun(t, bin, r, w, "hello", "")
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	pid := w.pid()

	ctx, cancel := context.WithCancel(testLog(t))
	type ran struct {
		res Result
		err error
	}
	ended := make(chan ran, 1)
	go func() {
		f := *r
		f.Job.Text, f.SessionID, f.Warm = "wait a long time", res1.SessionID, w
		res, err := (&Claude{Bin: bin}).Run(ctx, &f)
		ended <- ran{res, err}
	}()
	sleep := readPIDWithin(t, filepath.Join(r.Dir, "tool.pid"), claudeTimeout)
	t.Cleanup(func() { _ = syscall.Kill(sleep, syscall.SIGKILL) })
	cancel()
	sent := time.Now()
	got := <-ended
	t.Logf("Run returned %v after cancel", time.Since(sent).Round(time.Millisecond))
	if !errors.Is(got.err, context.Canceled) {
		t.Errorf("Run: %v; want it to wrap context.Canceled", got.err)
	}
	// Killed when the run returned; gone once the kernel is done with it.
	natstest.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if alive(sleep) {
			return fmt.Errorf("the tool's sleep (pid %d) still runs after the run returned", sleep)
		}
		return nil
	})
	t.Logf("the tool's sleep was gone %v after cancel", time.Since(sent).Round(time.Millisecond))
	honoured := w.pid() == pid && alive(pid)
	t.Logf("interrupt honoured (CLI kept): %t", honoured)

	res3, err := warmRun(t, bin, r, w, "are you there", res1.SessionID)
	if err != nil || res3.Text != "Still here." {
		t.Fatalf("run after the cancel: %+v, %v; want Still here.", res3, err)
	}
	if res3.Warm != honoured {
		t.Errorf("run after the cancel warm %t; want %t (the CLI kept: %t)", res3.Warm, honoured, honoured)
	}
	t.Logf("run after the cancel warm: %t", res3.Warm)
}

// In ask mode, a tool the second (warm) turn uses is asked about, and
// runs once allowed.
func TestWarmAsksOnSecondTurn(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t,
		claudetest.ToolUse("Bash", map[string]string{"command": "echo one > one.txt", "description": "write"}),
		claudetest.Text("Hello."),
		claudetest.ToolUse("Bash", map[string]string{"command": "echo two > two.txt", "description": "write"}),
		claudetest.Text("Wrote it."),
	)
	claudetest.Setenv(t, m)
	r, _ := claudeRun(t, "")
	r.Job.Mode = contract.ModeAsk
	var mu sync.Mutex
	var asked []Question
	r.Ask = func(_ context.Context, q Question) Answer {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, q)
		return Answer{Decision: contract.AnswerAllow}
	}
	w := newWarm(t)
	res1, err := warmRun(t, bin, r, w, "write one.txt", "")
	if err != nil || res1.Text != "Hello." {
		t.Fatalf("first run: %v", err)
	}
	res2, err := warmRun(t, bin, r, w, "write two.txt", res1.SessionID)
	if err != nil || res2.Text != "Wrote it." || !res2.Warm {
		t.Fatalf("second run: %+v, %v; want Wrote it., warm", res2, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked[1].Tool != "Bash" || asked[1].Session != res1.SessionID || !strings.Contains(asked[1].Text, "two.txt") {
		t.Errorf("asked %+v; want a Bash question each turn, the second about two.txt in session %s", asked, res1.SessionID)
	}
	for _, f := range []string{"one", "two"} {
		if b, err := os.ReadFile(filepath.Join(r.Dir, f+".txt")); err != nil || strings.TrimSpace(string(b)) != f {
			t.Errorf("%s.txt: %q, %v; want the allowed tool to have run", f, b, err)
		}
	}
}

// A CLI killed between runs is noticed: the next run starts a new one,
// which continues the session.
func TestWarmKilledBetweenRuns(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t, claudetest.Text("One."), claudetest.Text("Two."))
	claudetest.Setenv(t, m)
	r, _ := claudeRun(t, "")
	w := newWarm(t)
	res1, err := warmRun(t, bin, r, w, "one", "")
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	pid := w.pid()
	if pid == 0 {
		t.Fatal("no live CLI after the first run")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res2, err := warmRun(t, bin, r, w, "two", res1.SessionID)
	if err != nil || res2.Text != "Two." || res2.Warm {
		t.Fatalf("run after the kill: %+v, %v; want Two., cold", res2, err)
	}
	if res2.SessionID != res1.SessionID {
		t.Errorf("session %q after %q; want it continued", res2.SessionID, res1.SessionID)
	}
	if w.pid() == pid || w.pid() == 0 {
		t.Errorf("pid %d after killing %d; want a new live CLI", w.pid(), pid)
	}
}

// A warm CLI waiting for its person's next message is stopped once idle
// for idlePause: an idle Claude Code still spends about 29 ms of CPU a
// second on timers of its own, which a machine of warm homes pays for
// nothing. The next message continues it, and it answers warm; Close
// continues it too, so that it ends by its stdin as usual.
func TestWarmPausedWhileIdle(t *testing.T) {
	bin := claudetest.Binary(t)
	m := claudetest.NewModel(t, claudetest.Text("One."), claudetest.Text("Two."))
	claudetest.Setenv(t, m)
	shortPause(t)
	r, _ := claudeRun(t, "")
	w := newWarm(t)
	res1, err := warmRun(t, bin, r, w, "one", "")
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	chain := w.Pids()
	if len(chain) == 0 {
		t.Fatal("no live CLI after the first run")
	}
	cli := chain[len(chain)-1]
	natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if s := procState(cli); s != "T" {
			return fmt.Errorf("the idle CLI (pid %d) is in state %q; want T (stopped)", cli, s)
		}
		return nil
	})
	res2, err := warmRun(t, bin, r, w, "two", res1.SessionID)
	if err != nil || res2.Text != "Two." || !res2.Warm {
		t.Fatalf("run after the pause: %+v, %v; want Two., warm", res2, err)
	}
	if s := procState(cli); s == "T" {
		t.Errorf("the CLI is stopped right after a run; want it running until idle again")
	}
	natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if s := procState(cli); s != "T" {
			return fmt.Errorf("the CLI idle again is in state %q; want T", s)
		}
		return nil
	})
	start := time.Now()
	w.Close()
	if took := time.Since(start); took >= endGrace {
		t.Errorf("Close of a paused CLI took %v; want it to end by its stdin, within endGrace (%v)", took, endGrace)
	}
	if alive(cli) {
		t.Errorf("the CLI still runs after Close")
	}
}

// procState is process pid's state letter (R, S, T, Z, …), "" when it is
// gone.
func procState(pid int) string {
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

// shortPause makes warm agents stop after 200 ms idle, for the test.
func shortPause(t *testing.T) {
	was := idlePause
	idlePause = 200 * time.Millisecond
	t.Cleanup(func() { idlePause = was })
}
