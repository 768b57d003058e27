// Running the CLI against the stand-in: its environment (Env, Setenv),
// where its binary is (Binary) and the user it runs as under root
// (AgentUser).

package claudetest

import (
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
// testdata/npm/node_modules/.bin/claude under the repository root
// (natstest.Program).
func Binary(t testing.TB) string {
	t.Helper()
	return natstest.Program(t, "TEXTSLASH_TEST_CLAUDE_BIN", ".bin/claude", "claude CLI")
}

// AgentUser is the OS user to run the CLI as when the test runs as root
// (natstest.AgentUser).
func AgentUser(t testing.TB) string {
	t.Helper()
	return natstest.AgentUser(t)
}
