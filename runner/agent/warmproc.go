package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// claudeProc is a warm CLI: the process, its stdin, and one reader of its
// stdout handing each line to the current run (sink), or dropping it
// between runs.
type claudeProc struct {
	cmd    *exec.Cmd
	in     *claudeInput
	stderr *output.CappedBuffer // read once exited is closed
	exited chan struct{}        // closed once it exited and its output is read
	heard  chan struct{}        // closed at its first line: it runs
	once   sync.Once            // closes heard
	bin    string               // the CLI's binary, to tell it from its tools
	log    zerolog.Logger

	// What it was started with, and what its runs so far did; read and
	// written by the run using it (Warm.busy), or before it started.
	resumed  string  // the session it was started to continue (--resume)
	budget   bool    // it was started with --max-budget-usd capUSD
	capUSD   float64 // its --max-budget-usd
	spent    float64 // what its runs cost so far
	session  string  // the session it holds
	last     Usage   // the session's running total at its last result
	unknown  bool    // last is not known (sessionTotal)
	requests int     // interrupts sent, for their ids
	chain    []int   // from its process down to the CLI, once found

	mu   sync.Mutex        // held while a line is handed over
	sink func(line []byte) // the current run's, nil between runs
}

// startProc starts a warm CLI for r, continuing session, and opens its
// control protocol. Its ctx is r's without the cancel: the process
// outlives the run, and only its Warm ends it.
func startProc(ctx context.Context, c *Claude, r *Run, session string) (*claudeProc, error) {
	p := &claudeProc{resumed: session, bin: warmBin(c.bin()), exited: make(chan struct{}), heard: make(chan struct{}),
		stderr: &output.CappedBuffer{Max: stderrKeep}}
	p.last, p.unknown = sessionTotal(r, session)
	if b := r.Job.Budget; b != nil {
		p.budget, p.capUSD = true, b.LeftUSD
	}
	p.cmd = r.Command(context.WithoutCancel(ctx), c.bin(), c.args(r, session, p.capUSD)...)
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	p.in = &claudeInput{w: stdin, quit: make(chan struct{})}
	lines := &output.LineWriter{Max: maxStreamLine, Line: p.deliver}
	p.cmd.Stdout, p.cmd.Stderr = lines, p.stderr
	if err := p.cmd.Start(); err != nil {
		if se := setupStart(p.cmd, err); se != nil {
			return nil, se
		}
		return nil, err
	}
	p.log = zerolog.Ctx(ctx).With().Int("claude_pid", p.cmd.Process.Pid).Logger()
	p.log.Info().Str("resume", session).Msg("claude: started a warm CLI")
	go func() {
		_ = p.cmd.Wait() // the exit code is read from cmd.ProcessState
		lines.Flush()
		close(p.exited)
	}()
	p.in.initialize()
	return p, nil
}

// deliver hands a line of the CLI's output to the current run.
func (p *claudeProc) deliver(line []byte) {
	p.once.Do(func() { close(p.heard) })
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sink != nil {
		p.sink(line)
		return
	}
	if ev, err := parseStreamLine(line); err == nil {
		p.log.Debug().Str("type", ev.Type).Str("subtype", ev.Subtype).Msg("claude: warm CLI output between runs, dropped")
	}
}

// setSink makes sink the receiver of the CLI's lines; it waits for a line
// being handed over to be done with.
func (p *claudeProc) setSink(sink func(line []byte)) {
	p.mu.Lock()
	p.sink = sink
	p.mu.Unlock()
}

func (p *claudeProc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// turnOutcome is how a run's turn on a warm CLI ended.
type turnOutcome struct {
	p     *claudeProc
	died  bool // the CLI exited before the turn's result
	stuck bool // cancelled, and the CLI did not end its turn in time
	heard bool // the CLI said something during the turn
}

// exitCode is the CLI's exit code once it exited, 0 while it runs.
func (o turnOutcome) exitCode() int {
	if o.died || o.stuck {
		<-o.p.exited // the Warm ended it
		return sandbox.ExitCode(o.p.cmd)
	}
	return 0
}

// stderr is the CLI's stderr, once it exited.
func (o turnOutcome) stderr() []byte {
	if o.p.alive() {
		return nil
	}
	return o.p.stderr.Bytes()
}

// turn sends r's message and hands the CLI's lines to r's stream until
// the turn's result. When ctx ends first, it interrupts the turn and
// waits interruptWait for its result.
func (p *claudeProc) turn(ctx context.Context, r *Run) (*claudeStream, turnOutcome) {
	out := turnOutcome{p: p}
	st := p.stream(r)
	done := make(chan struct{})
	var once sync.Once
	st.turnEnd = func() { once.Do(func() { close(done) }) }
	p.setSink(func(line []byte) {
		out.heard = true
		st.handle(ctx, line)
	})
	// Steers stop at the turn's result. One written as the CLI writes its
	// result starts another turn, whose lines go to no run (or to the next
	// run's, if it starts first): the same race a cold CLI has with the
	// close of its stdin, which it answers with one more turn too.
	steering := make(chan struct{})
	go func() { defer close(steering); p.in.steer(r.Steers, done) }()
	defer func() {
		st.turnEnd() // no steers past the turn
		<-steering
		p.setSink(nil)
	}()

	if !p.in.user(prompt(r)) {
		out.died = true // its stdin is gone
		return st, out
	}
	select {
	case <-done:
		return st, out
	case <-p.exited:
		out.died = true
		return st, out
	case <-ctx.Done():
	}
	p.requests++
	p.in.interrupt("interrupt-" + strconv.Itoa(p.requests))
	t := time.NewTimer(interruptWait)
	defer t.Stop()
	select {
	case <-done:
	case <-p.exited:
		out.died = true
	case <-t.C:
		out.stuck = true
		p.log.Warn().Dur("waited_ms", interruptWait).Msg("claude: the warm CLI did not end its turn on interrupt; ending it")
	}
	return st, out
}

// stream is a stream for r's turn, going on from the process's earlier
// turns: a result's running totals are the process's, and what the model
// did since its previous result is what this turn did.
func (p *claudeProc) stream(r *Run) *claudeStream {
	st := newStream(r, p.in, p.resumed)
	st.last, st.unknown, st.sessionID = p.last, p.unknown, p.session
	return st
}

// keep notes what the turn of st did to the process.
func (p *claudeProc) keep(st *claudeStream) {
	if st.sessionID != "" {
		p.session = st.sessionID
	}
	p.last, p.unknown = st.last, st.unknown
	p.spent += st.spent.USD
}

// end closes the CLI's stdin, gives it endGrace to exit, and then kills
// its group and everything carrying its run mark.
func (p *claudeProc) end() {
	p.in.close()
	t := time.NewTimer(endGrace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
	}
	sandbox.EndGroup(p.cmd)
	<-p.exited
	p.log.Info().Int("exit_code", sandbox.ExitCode(p.cmd)).Msg("claude: warm CLI ended")
}

// endTools ends what the run's turn left running: every process carrying
// the CLI's run mark but the CLI and the processes it runs in.
func (p *claudeProc) endTools() error {
	if p.chain == nil {
		p.chain = cliChain(p.cmd.Process.Pid, p.bin)
		if p.chain == nil {
			return fmt.Errorf("%w (%s under pid %d)", errNoCLI, p.bin, p.cmd.Process.Pid)
		}
	}
	sandbox.EndMarked(p.cmd, p.chain...)
	return nil
}

// cliChain is the processes from root down to the first one running the
// executable bin (root itself when it does), root first; nil when there
// is none within a few generations. Between them are the processes a
// sandboxed run goes through (bubblewrap and its init); below it, the
// CLI's tools.
func cliChain(root int, bin string) []int {
	want, err := os.Stat(bin)
	if err != nil {
		return nil
	}
	var walk func(pid, depth int) []int
	walk = func(pid, depth int) []int {
		if exe, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && os.SameFile(exe, want) {
			return []int{pid}
		}
		if depth == 0 {
			return nil
		}
		for _, child := range children(pid) {
			if chain := walk(child, depth-1); chain != nil {
				return append([]int{pid}, chain...)
			}
		}
		return nil
	}
	return walk(root, 4)
}

// children are the ids of pid's child processes.
func children(pid int) []int {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var kids []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if id, err := strconv.Atoi(f); err == nil {
				kids = append(kids, id)
			}
		}
	}
	return kids
}
