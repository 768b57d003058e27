package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/sandbox"
)

// olderClaude is a Claude Code CLI answering as 2.1.197 does: every turn
// the model serves 100 tokens in, 20 out, for $0.001, and each result
// carries the session's running totals (total_cost_usd, modelUsage),
// continued across --resume, without model_usage_since_last_result. It
// keeps its sessions in its home, as the CLI does, and notes each turn it
// served in ~/.olderclaude/served.
const olderClaude = `#!/bin/bash
state="$HOME/.olderclaude"
mkdir -p "$state"
session=
while [ $# -gt 0 ]; do
	if [ "$1" = --resume ]; then session=$2; shift; fi
	shift
done
[ -n "$session" ] || session=$(cat /proc/sys/kernel/random/uuid)
turns=0
[ -f "$state/$session" ] && read -r turns < "$state/$session"
echo '{"type":"system","subtype":"init","session_id":"'"$session"'"}'
while IFS= read -r line; do
	case "$line" in
	*'"type":"user"'*)
		turns=$((turns + 1))
		echo "$turns" > "$state/$session"
		echo served >> "$state/served"
		printf '{"type":"result","subtype":"success","is_error":false,"result":"turn %d","session_id":"%s","total_cost_usd":%d.%03d,"modelUsage":{"claude":{"inputTokens":%d,"outputTokens":%d,"costUSD":%d.%03d}}}\n' \
			"$turns" "$session" $((turns / 1000)) $((turns % 1000)) $((turns * 100)) $((turns * 20)) $((turns / 1000)) $((turns % 1000))
		;;
	esac
done
`

// With a Claude Code CLI that does not say what each result adds
// (2.1.197), a run counts the tokens the model served it, also when the
// CLI starts again with --resume: after a mode change, after the runner
// restarts, and here after every run (the warm CLI of a kept home, a
// script, cannot be told from its tools and is ended after each run).
// The session's running total at its last result is kept beside its id
// in the agent's home.
func TestRunnerCountsAnOlderClaudeAcrossRestarts(t *testing.T) {
	for _, tt := range []struct {
		name string
		box  *sandbox.Sandbox
	}{
		{"kept home", &sandbox.Sandbox{}},
		{"run of its own", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			bin := olderClaudeBin(t)
			e := newRunnerEnv(t)
			cfg := Config{Agent: AgentClaude, ClaudeBin: bin, AgentUser: claudetest.AgentUser(t), Sandbox: tt.box, HomeIdle: time.Hour}
			stop := e.start(cfg)
			u := e.user(contract.ChannelWeb, "alice")
			var in, out int
			run := func(id, mode string) {
				t.Helper()
				ev := e.run(contract.Job{ID: id, User: u, Text: "go on", Mode: mode})
				if ev.Status != contract.StatusOK || !strings.HasPrefix(ev.Text, "turn ") {
					t.Fatalf("job %s: %s %q; want ok and the CLI's reply", id, ev.Status, ev.Text)
				}
				in, out = in+ev.InputTokens, out+ev.OutputTokens
			}
			run("m1", contract.ModeAuto)
			run("m2", contract.ModeAuto)
			run("m3", contract.ModePlan)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			e.start(cfg)
			run("m4", contract.ModePlan)

			served, err := os.ReadFile(filepath.Join(e.workspaces, ".home", u.Key(), ".olderclaude", "served"))
			if err != nil {
				t.Fatal(err)
			}
			turns := strings.Count(string(served), "served")
			if turns != 4 || in != turns*100 || out != turns*20 {
				t.Errorf("counted %d tokens in, %d out; want what the model served in %d turns (4): %d in, %d out", in, out, turns, turns*100, turns*20)
			}
		})
	}
}

// olderClaudeBin is olderClaude where npm puts a CLI, which the sandbox
// shows: in a node_modules directory the agent user may read.
func olderClaudeBin(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte(olderClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
