// Running the CLI against the stand-in: its environment (Env, Setenv),
// where its binary is (Binary) and the user it runs as under root
// (AgentUser).

package claudetest

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/textslash/textslash/natstest"
)

// Env is the environment the CLI needs to talk to m, and only to m, and to
// start quickly: no updates, telemetry, error reports or other side traffic.
func Env(m *Model) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + m.URL(),
		"ANTHROPIC_API_KEY=sk-ant-claudetest",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		// Fail at once on an API error instead of retrying with backoff.
		"CLAUDE_CODE_MAX_RETRIES=0",
	}
}

// Setenv sets Env(m) for the test's duration with t.Setenv.
func Setenv(t testing.TB, m *Model) {
	t.Helper()
	for _, kv := range Env(m) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Binary is the path of the claude CLI: $TEXTSLASH_TEST_CLAUDE_BIN, else
// testdata/npm/node_modules/.bin/claude under the repository root (the
// directory holding go.work). The test is skipped when it is missing, or
// fails when $CI is set.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("TEXTSLASH_TEST_CLAUDE_BIN")
	if bin == "" {
		root, err := natstest.RepoRoot()
		if err != nil {
			natstest.Missing(t, "claude CLI: %v", err)
		}
		bin = filepath.Join(root, "testdata", "npm", "node_modules", ".bin", "claude")
	}
	fi, err := os.Stat(bin)
	if err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
		err = errors.New("not an executable file")
	}
	if err != nil {
		natstest.Missing(t, "claude CLI %s: %v", bin, err)
	}
	return bin
}

// AgentUser is the OS user to run the CLI as when the test runs as root
// (Claude Code refuses --dangerously-skip-permissions as root):
// $TEXTSLASH_TEST_AGENT_USER, else "textslash-agent". It is "" when the
// test does not run as root. The test is skipped when the user does not
// exist, or fails when $CI is set.
func AgentUser(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return ""
	}
	name := os.Getenv("TEXTSLASH_TEST_AGENT_USER")
	if name == "" {
		name = "textslash-agent"
	}
	if _, err := user.Lookup(name); err != nil {
		natstest.Missing(t, "agent user: %v", err)
	}
	return name
}
