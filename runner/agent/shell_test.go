package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/sandbox"
)

// shellRun prepares a fresh workspace and home and a Run of script in it,
// as u (nil: as this process's user). The environment is taken now: call
// t.Setenv before.
func shellRun(t *testing.T, script string, u *sandbox.User) (r *Run, home string) {
	t.Helper()
	root := t.TempDir()
	if u != nil {
		// t.TempDir and its parent are 0700: let the agent user through.
		for _, d := range []string{filepath.Dir(root), root} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	if err := sandbox.PrepareWorkspace(dir, home, u); err != nil {
		t.Fatalf("sandbox.PrepareWorkspace: %v", err)
	}
	return &Run{
		Job:       contract.Job{V: contract.Version, ID: "job-1", Text: script, At: time.Now()},
		Dir:       dir,
		Command:   sandbox.CommandFunc(dir, home, u, false),
		Progress:  func(string) {},
		OutputCap: 1 << 20,
	}, home
}

func runShell(t *testing.T, ctx context.Context, r *Run) Result {
	t.Helper()
	res, err := Shell{}.Run(ctx, r)
	if err != nil {
		t.Fatalf("Shell.Run(%q): %v (result %+v)", r.Job.Text, err, res)
	}
	return res
}

func TestShellOutputAndExitCode(t *testing.T) {
	tests := []struct {
		script   string
		wantText string
		wantExit int
	}{
		{"echo hi", "hi\n", 0},
		{"true", "", 0},
		{"exit 3", "\n[exit 3]", 3},
		{"echo partial; exit 42", "partial\n\n[exit 42]", 42},
		{"echo oops >&2", "oops\n", 0},
		{"echo out; echo err >&2; echo out2", "out\nerr\nout2\n", 0},
		{"no-such-command-xyz 2>/dev/null", "\n[exit 127]", 127},
		{"kill -9 $$", "\n[exit 137]", 137},
		{"cat", "", 0}, // stdin is empty, not the runner's
		{"printf 'a\\x00b'", "a\x00b", 0},
		{"echo 'héllo ✓'", "héllo ✓\n", 0},
	}
	for _, tt := range tests {
		r, _ := shellRun(t, tt.script, nil)
		res := runShell(t, t.Context(), r)
		if res.Text != tt.wantText || res.ExitCode != tt.wantExit {
			t.Errorf("%q: got %q exit %d; want %q exit %d", tt.script, res.Text, res.ExitCode, tt.wantText, tt.wantExit)
		}
		if res.Truncated {
			t.Errorf("%q: got Truncated; want not", tt.script)
		}
	}
}

func TestShellRunsInWorkspace(t *testing.T) {
	r, _ := shellRun(t, "pwd -P; echo made > here.txt", nil)
	res := runShell(t, t.Context(), r)
	want, err := filepath.EvalSymlinks(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != want+"\n" {
		t.Errorf("pwd: got %q; want %q", res.Text, want+"\n")
	}
	if data, err := os.ReadFile(filepath.Join(r.Dir, "here.txt")); err != nil || string(data) != "made\n" {
		t.Errorf("file written in the workspace: got %q, %v; want %q", data, err, "made\n")
	}
}

func TestShellOutputCap(t *testing.T) {
	tests := []struct {
		script        string
		cap           int
		wantTruncated bool
		wantLen       int // of the text without the suffix
	}{
		{"yes | head -c 100000", 1000, true, 1000},
		{"head -c 5000000 /dev/zero", 1000, true, 1000},
		{"yes | head -c 999", 1000, false, 999},
		{"yes | head -c 1000", 1000, false, 1000},
		{"yes | head -c 1001", 1000, true, 1000},
		{"for i in $(seq 200); do echo line $i; echo err $i >&2; done", 100, true, 100},
	}
	for _, tt := range tests {
		r, _ := shellRun(t, tt.script, nil)
		r.OutputCap = tt.cap
		res := runShell(t, t.Context(), r)
		if res.ExitCode != 0 {
			t.Errorf("%q: got exit %d; want 0", tt.script, res.ExitCode)
		}
		checkCapped(t, fmt.Sprintf("%q cap %d", tt.script, tt.cap), res, tt.cap, tt.wantTruncated, tt.wantLen)
	}
}

// checkCapped checks the output of a run capped at limit bytes: cut or
// not as wantTruncated says, wantLen bytes of it kept, and a cut one
// ending in the note that says so.
func checkCapped(t *testing.T, name string, res Result, limit int, wantTruncated bool, wantLen int) {
	t.Helper()
	const suffix = "\n[output truncated]"
	if res.Truncated != wantTruncated {
		t.Errorf("%s: got Truncated %v; want %v", name, res.Truncated, wantTruncated)
	}
	text := res.Text
	if wantTruncated {
		if !strings.HasSuffix(text, suffix) {
			t.Errorf("%s: got text ending %q; want %q", name, text[max(0, len(text)-30):], suffix)
		}
		text = strings.TrimSuffix(text, suffix)
	}
	if len(text) != wantLen {
		t.Errorf("%s: got %d bytes of output; want %d", name, len(text), wantLen)
	}
	if len(res.Text) > limit+len(suffix) {
		t.Errorf("%s: got %d bytes; want at most %d", name, len(res.Text), limit+len(suffix))
	}
}

// groupAlive lists the processes of process group pgid that are still
// running (zombies waiting for a reaper are dead).
func groupAlive(t *testing.T, pgid int) []string {
	t.Helper()
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var alive []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid pgrp ...
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" || fields[2] != strconv.Itoa(pgid) {
			continue
		}
		alive = append(alive, e.Name()+" "+s[strings.IndexByte(s, '(')+1:strings.LastIndexByte(s, ')')]+" "+fields[0])
	}
	return alive
}

// readPID waits for the script to write a pid into file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	return readPIDWithin(t, file, 10*time.Second)
}

// readPIDWithin waits up to within for file to hold a pid.
func readPIDWithin(t *testing.T, file string, within time.Duration) int {
	t.Helper()
	var pid int
	natstest.CheckFor(t, within, 5*time.Millisecond, func() error {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err
	})
	return pid
}

// killGroupAtEnd makes sure the test leaves nothing of its own behind,
// whatever the code under test did.
func killGroupAtEnd(t *testing.T, pgid int) {
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
}

func TestShellCancelEndsProcessGroup(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		wantExit int
	}{
		{"child outlives bash", `echo $$ > pgid; sleep 300 & echo $! > child; sleep 300`, 128 + 15},
		{"grandchild of a finished subshell", `echo $$ > pgid; (sleep 300 & echo $! > child); sleep 300`, 128 + 15},
		{"everything ignores SIGTERM", `echo $$ > pgid; trap '' TERM; sleep 300 & echo $! > child; sleep 300`, 128 + 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := shellRun(t, tt.script, nil)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			type ran struct {
				res Result
				err error
			}
			ended := make(chan ran, 1)
			go func() {
				res, err := Shell{}.Run(ctx, r)
				ended <- ran{res, err}
			}()
			pgid := readPID(t, filepath.Join(r.Dir, "pgid"))
			killGroupAtEnd(t, pgid)
			child := readPID(t, filepath.Join(r.Dir, "child"))
			if got := groupAlive(t, pgid); len(got) < 2 {
				t.Fatalf("before cancel: group %d has %q; want bash and its sleeps", pgid, got)
			}
			if pg, err := syscall.Getpgid(child); err != nil || pg != pgid {
				t.Fatalf("child %d: got process group %d, %v; want %d", child, pg, err, pgid)
			}

			cancel()
			var got ran
			select {
			case got = <-ended:
			case <-time.After(15 * time.Second):
				t.Fatalf("Run still going 15s after cancel (sleep 300 would take 300s)")
			}
			if got.err != nil {
				t.Errorf("Run: got error %v; want nil", got.err)
			}
			// The exit code is the signal's: the reply says the run was
			// stopped (report), not "[exit 143]".
			if got.res.ExitCode != tt.wantExit || strings.Contains(got.res.Text, "[exit") {
				t.Errorf("result: got exit %d text %q; want exit %d and no [exit …] line", got.res.ExitCode, got.res.Text, tt.wantExit)
			}
			natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
				if alive := groupAlive(t, pgid); len(alive) > 0 {
					return fmt.Errorf("process group %d still has %q", pgid, alive)
				}
				return nil
			})
		})
	}
}

// A script that leaves a program running in the background has still
// finished: its exit code is its own, and nothing it started outlives the
// run (it would escape the runner's timeout and concurrency limit).
func TestShellBackgroundChildAfterScriptEnds(t *testing.T) {
	r, _ := shellRun(t, `echo $$ > pgid; sleep 300 & echo started`, nil)
	res, err := Shell{}.Run(t.Context(), r)
	pgid := readPID(t, filepath.Join(r.Dir, "pgid"))
	killGroupAtEnd(t, pgid)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 0 || res.Text != "started\n" {
		t.Errorf("result: got exit %d text %q; want exit 0 text %q", res.ExitCode, res.Text, "started\n")
	}
	// SIGKILL is sent when Run returns; dying takes the kernel a moment.
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if alive := groupAlive(t, pgid); len(alive) > 0 {
			return fmt.Errorf("after Run returned, process group %d still has %q; want nothing left", pgid, alive)
		}
		return nil
	})
}

// A program that leaves its process group and session (setsid, as Claude
// Code does for its tools) still ends with the run.
func TestShellEscapedChildEnds(t *testing.T) {
	r, _ := shellRun(t, `setsid sleep 300 & echo $! > child; echo started`, nil)
	res, err := Shell{}.Run(t.Context(), r)
	child := readPID(t, filepath.Join(r.Dir, "child"))
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Run: %v, exit %d", err, res.ExitCode)
	}
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child)); err == nil && !strings.Contains(string(stat), ") Z ") {
			return fmt.Errorf("the child in a session of its own (%d) still runs", child)
		}
		return nil
	})
}

func readEnv(t *testing.T, text string) map[string]string {
	t.Helper()
	env := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env
}

func TestShellEnvironment(t *testing.T) {
	t.Setenv("TWILIO_AUTH_TOKEN", "secret")
	t.Setenv("NATS_CREDS", "x")
	// How services run apart and the nats CLI log in to NATS (admin's, on
	// textslash serve's embedded server).
	t.Setenv("NATS_URL", "nats://127.0.0.1:4222")
	t.Setenv("NATS_USER", "admin")
	t.Setenv("NATS_PASSWORD", "nats-secret")
	t.Setenv("TEXTSLASH_WEB_TOKEN", "y")
	t.Setenv("TELEGRAM_BOT_TOKEN", "z")
	t.Setenv("PATHOLOGICAL", "p") // a prefix of an allowed exact name is not allowed
	t.Setenv("ANTHROPIC_API_KEY", "k")
	t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	t.Setenv("TZ", "UTC")
	r, home := shellRun(t, "env", nil)
	res := runShell(t, t.Context(), r)
	env := readEnv(t, res.Text)
	// The shell gets no model credentials either: only Claude Code needs them.
	for _, name := range []string{"TWILIO_AUTH_TOKEN", "NATS_CREDS", "NATS_URL", "NATS_USER", "NATS_PASSWORD", "TEXTSLASH_WEB_TOKEN", "TELEGRAM_BOT_TOKEN", "PATHOLOGICAL", "ANTHROPIC_API_KEY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"} {
		if v, ok := env[name]; ok {
			t.Errorf("%s: got %q in the agent's environment; want absent", name, v)
		}
	}
	model := sandbox.Env(home, nil, true)
	for _, kv := range []string{"ANTHROPIC_API_KEY=k", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"} {
		if !slices.Contains(model, kv) {
			t.Errorf("Claude Code's environment lacks %s: %q", kv, model)
		}
	}
	for _, kv := range model {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "TWILIO_") || strings.HasPrefix(name, "NATS_") {
			t.Errorf("Claude Code's environment has %s", name)
		}
	}
	want := map[string]string{
		"TZ":    "UTC",
		"HOME":  home,
		"PATH":  os.Getenv("PATH"),
		"SHELL": "/bin/bash",
	}
	for name, v := range want {
		if env[name] != v {
			t.Errorf("%s: got %q; want %q", name, env[name], v)
		}
	}
	for _, name := range []string{"USER", "LOGNAME"} {
		if v, ok := env[name]; ok {
			t.Errorf("%s without an agent user: got %q; want absent", name, v)
		}
	}
	if strings.Contains(res.Text, "secret") {
		t.Errorf("the agent's environment shows the Twilio token: %q", res.Text)
	}
}

func TestShellAsAgentUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	const name = "textslash-agent"
	u, err := sandbox.LookupUser(name)
	if err != nil {
		t.Skipf("no agent user: %v", err)
	}
	r, home := shellRun(t, `id -u; id -g; id -G; echo "$HOME $USER"; touch made-here && stat -c %u made-here; `+
		`touch "$HOME/h" && echo home-ok; touch /root/nope 2>/dev/null || echo no-root`, u)
	res := runShell(t, t.Context(), r)
	uid, gid := fmt.Sprint(u.UID), fmt.Sprint(u.GID)
	want := strings.Join([]string{uid, gid, gid, home + " " + name, uid, "home-ok", "no-root"}, "\n") + "\n"
	if res.Text != want || res.ExitCode != 0 {
		t.Errorf("as %s: got %q exit %d; want %q exit 0", name, res.Text, res.ExitCode, want)
	}
	if uid != "999" {
		t.Logf("note: %s has uid %s here", name, uid)
	}
	for _, d := range []string{r.Dir, home} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != u.UID || st.Gid != u.GID || fi.Mode().Perm() != 0o750 {
			t.Errorf("%s: got owner %d:%d mode %v; want %d:%d 0750", d, st.Uid, st.Gid, fi.Mode().Perm(), u.UID, u.GID)
		}
	}
}
