// Running the CLI against the stand-in: its environment (Env), where its
// binary is (Binary) and the user it runs as under root (AgentUser).

package geminitest

import (
	"encoding/json"
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"testing"

	"github.com/textslash/textslash/natstest"
)

// APIKey is the Gemini API key Env gives the CLI; the stand-in accepts any.
const APIKey = "geminitest-api-key"

// settings is the CLI's system settings file Env points at: what no
// environment variable of Gemini CLI 0.61.0 turns off (usage statistics,
// sent to play.googleapis.com, and update checks, sent to the npm registry).
var settings = map[string]any{
	"privacy":   map[string]any{"usageStatisticsEnabled": false},
	"telemetry": map[string]any{"enabled": false},
	"general": map[string]any{
		"enableAutoUpdate":             false,
		"enableAutoUpdateNotification": false,
	},
}

// Env is the environment the CLI needs to talk to m, and only to m, and to
// start quickly: no updates, telemetry, usage statistics or other side
// traffic. Its system settings file (GEMINI_CLI_SYSTEM_SETTINGS_PATH) is
// written once, readable by every user, and removed when the test ends.
func Env(m *Model) []string {
	m.envOnce.Do(func() {
		dir, err := os.MkdirTemp("", "geminitest-settings-")
		if err == nil {
			m.t.Cleanup(func() { os.RemoveAll(dir) })
			err = os.Chmod(dir, 0o755)
		}
		b, _ := json.MarshalIndent(settings, "", "  ")
		path := filepath.Join(dir, "settings.json")
		if err == nil {
			err = os.WriteFile(path, b, 0o644)
		}
		if err != nil {
			m.t.Fatalf("geminitest: system settings: %v", err)
		}
		m.settings = path
	})
	return []string{
		// The Gemini API's base URL; set, it also makes the CLI's default
		// auth type "gateway" rather than "gemini-api-key".
		"GOOGLE_GEMINI_BASE_URL=" + m.URL(),
		"GEMINI_API_KEY=" + APIKey,
		"GEMINI_CLI_SYSTEM_SETTINGS_PATH=" + m.settings,
		"GEMINI_TELEMETRY_ENABLED=false",
		// Trust the workspace: an untrusted folder runs in a restricted mode.
		"GEMINI_CLI_TRUST_WORKSPACE=true",
		// One process: no relaunch of node with a bigger heap.
		"GEMINI_CLI_NO_RELAUNCH=true",
	}
}

// Binary is the path of the gemini CLI: $TEXTSLASH_TEST_GEMINI_BIN, else
// testdata/npm/node_modules/.bin/gemini under the repository root (the
// directory holding go.work). The test is skipped when it is missing, or
// fails when $CI is set.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("TEXTSLASH_TEST_GEMINI_BIN")
	if bin == "" {
		root, err := natstest.RepoRoot()
		if err != nil {
			natstest.Missing(t, "gemini CLI: %v", err)
		}
		bin = filepath.Join(root, "testdata", "npm", "node_modules", ".bin", "gemini")
	}
	fi, err := os.Stat(bin)
	if err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
		err = errors.New("not an executable file")
	}
	if err != nil {
		natstest.Missing(t, "gemini CLI %s: %v", bin, err)
	}
	return bin
}

// AgentUser is the OS user to run the CLI as when the test runs as root
// (agents do not run as root in textslash): $TEXTSLASH_TEST_AGENT_USER,
// else "textslash-agent". It is "" when the test does not run as root. The
// test is skipped when the user does not exist, or fails when $CI is set.
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
