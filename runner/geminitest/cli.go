// Running the CLI against the stand-in: its environment (Env), where its
// binary is (Binary) and the user it runs as under root (AgentUser).

package geminitest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/textslash/textslash/natstest"
)

// APIKey is the Gemini API key Env gives the CLI; the stand-in accepts any.
const APIKey = "geminitest-api-key"

// Settings is the user settings file WriteSettings writes: what no
// environment variable of Gemini CLI 0.61.0 turns off (usage statistics,
// sent to play.googleapis.com, and update checks, sent to the npm registry).
var Settings = map[string]any{
	"privacy":   map[string]any{"usageStatisticsEnabled": false},
	"telemetry": map[string]any{"enabled": false},
	"general": map[string]any{
		"enableAutoUpdate":             false,
		"enableAutoUpdateNotification": false,
	},
}

// Env is the environment the CLI needs to talk to m, and only to m, and to
// start quickly: no telemetry, no relaunch, a trusted workspace. Usage
// statistics and update checks have no variable: WriteSettings turns them
// off. (A system settings file, GEMINI_CLI_SYSTEM_SETTINGS_PATH, would do
// without a HOME, but the CLI skips one under a world-writable directory
// such as /tmp.)
func Env(m *Model) []string {
	return []string{
		// The Gemini API's base URL; set, it also makes "gateway" the
		// auth type of a session when none was chosen with authenticate.
		"GOOGLE_GEMINI_BASE_URL=" + m.URL(),
		"GEMINI_API_KEY=" + APIKey,
		"GEMINI_TELEMETRY_ENABLED=false",
		// Trust the workspace: an untrusted folder runs in a restricted mode.
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		// One process: no relaunch of node with a bigger heap.
		"GEMINI_CLI_NO_RELAUNCH=true",
	}
}

// WriteSettings writes Settings to home/.gemini/settings.json, the CLI's
// user settings, owned like home (by the agent user when it owns home).
func WriteSettings(t testing.TB, home string) {
	t.Helper()
	fi, err := os.Stat(home)
	if err != nil {
		t.Fatalf("geminitest: settings: %v", err)
	}
	dir := filepath.Join(home, ".gemini")
	path := filepath.Join(dir, "settings.json")
	b, _ := json.MarshalIndent(Settings, "", "  ")
	err = os.MkdirAll(dir, 0o700)
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && err == nil {
		err = errors.Join(os.Chown(dir, int(st.Uid), int(st.Gid)), os.Chown(path, int(st.Uid), int(st.Gid)))
	}
	if err != nil {
		t.Fatalf("geminitest: settings: %v", err)
	}
}

// Binary is the path of the gemini CLI: $TEXTSLASH_TEST_GEMINI_BIN, else
// testdata/npm/node_modules/.bin/gemini under the repository root
// (natstest.Program).
func Binary(t testing.TB) string {
	t.Helper()
	return natstest.Program(t, "TEXTSLASH_TEST_GEMINI_BIN", ".bin/gemini", "gemini CLI")
}

// AgentUser is the OS user to run the CLI as when the test runs as root
// (natstest.AgentUser).
func AgentUser(t testing.TB) string {
	t.Helper()
	return natstest.AgentUser(t)
}
