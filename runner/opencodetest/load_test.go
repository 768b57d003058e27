package opencodetest

import (
	"bufio"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
	"github.com/textslash/textslash/runner/claudetest"
)

// A session outlives its process: killed and started again in the same
// HOME, opencode loads it by id (replaying it as session/update) and the
// next prompt continues the conversation.
func TestSessionLoadAfterRestart(t *testing.T) {
	m := claudetest.NewModel(t, claudetest.Text("Hello there"), claudetest.Text("Still here"))
	d := newDirs(t)
	reject := selectKind(acp.PermissionOptionKindRejectOnce)

	a := startAgent(t, m, d, reject)
	if !a.initialize(t).AgentCapabilities.LoadSession {
		t.Fatal("initialize: loadSession is false")
	}
	s := a.newSession(t, d)
	t.Logf("idle RSS after session/new: %d KiB", rssKiB(t, a.cmd.Process.Pid))
	if res := a.prompt(t, s.SessionId, "say hello"); res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("first prompt: stopReason %q", res.StopReason)
	}
	t.Logf("idle RSS after a turn: %d KiB", rssKiB(t, a.cmd.Process.Pid))
	a.stop()
	logHome(t, d.home)
	// npm offline: opencode's background plugin install fetched nothing.
	if _, err := os.Stat(filepath.Join(d.home, ".npm", "_cacache", "index-v5")); !os.IsNotExist(err) {
		t.Errorf("npm cached registry answers under HOME (%v): opencode reached the registry", err)
	}

	b := startAgent(t, m, d, reject)
	b.initialize(t)
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	lr, err := b.conn.LoadSession(ctx, acp.LoadSessionRequest{SessionId: s.SessionId, Cwd: d.ws, McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatalf("session/load: %v", err)
	}
	raw, _ := json.Marshal(lr)
	t.Logf("session/load: %s", raw)
	t.Logf("replayed update kinds: %v", b.client.updateKinds())
	if got := b.client.messageText(); got != "Hello there" {
		t.Errorf("replayed agent message %q; want \"Hello there\"", got)
	}
	if res := b.prompt(t, s.SessionId, "still there?"); res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt after load: stopReason %q", res.StopReason)
	}
	main := m.MainRequests()
	last := main[len(main)-1]
	if len(last.Messages) != 3 {
		t.Errorf("prompt after load sent %d messages; want 3 (the loaded turn and the new prompt)", len(last.Messages))
	}
}

// rssKiB is the resident set of process pid, from /proc.
func rssKiB(t testing.TB, pid int) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// logHome logs every file opencode left under home, with its size.
func logHome(t testing.TB, home string) {
	t.Helper()
	_ = filepath.WalkDir(home, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		fi, _ := e.Info()
		rel, _ := filepath.Rel(home, p)
		t.Logf("HOME file %s (%d bytes)", rel, fi.Size())
		return nil
	})
}
