// Package opencodetest runs the real opencode CLI (opencode acp) in tests
// against claudetest's scripted stand-in for the Anthropic Messages API.
//
//	m := claudetest.NewModel(t,
//		claudetest.ToolUse("bash", map[string]string{"command": "echo hi > hello.txt", "description": "Write hello.txt"}),
//		claudetest.Text("All done"),
//	)
//	cmd := exec.Command(opencodetest.Binary(t), "acp")
//	cmd.Env = append(os.Environ(), opencodetest.Env(m, home)...)
//
// opencode 1.18.33 reaches Anthropic through @ai-sdk/anthropic, which posts
// to <baseURL>/messages: Config points provider.anthropic.options.baseURL at
// m.URL()+"/v1". Its model catalogue is the snapshot compiled into the
// binary (models.dev is never fetched with OPENCODE_DISABLE_MODELS_FETCH),
// which knows anthropic/claude-sonnet-4-5.
package opencodetest

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
)

// Model is the model Config selects, as provider/model.
const Model = "anthropic/claude-sonnet-4-5"

// Config is an opencode.json making opencode talk to m and only m:
// Anthropic alone enabled, its base URL m's, no sharing or autoupdate, and
// permission to ask before running a shell command or editing a file (so a
// client sees session/request_permission).
func Config(m *claudetest.Model) map[string]any {
	return map[string]any{
		"$schema":           "https://opencode.ai/config.json",
		"model":             Model,
		"small_model":       Model,
		"enabled_providers": []string{"anthropic"},
		"provider": map[string]any{
			"anthropic": map[string]any{
				"options": map[string]any{
					"baseURL": m.URL() + "/v1",
					"apiKey":  "sk-ant-opencodetest",
				},
			},
		},
		"permission": map[string]any{"bash": "ask", "edit": "ask"},
		"autoupdate": false,
		"share":      "disabled",
		"lsp":        false,
		"formatter":  false,
	}
}

// Env is the environment opencode needs to talk to m, and only to m, with
// home as its HOME: Config(m) as OPENCODE_CONFIG_CONTENT, the XDG
// directories inside home, and every switch 1.18.33 has against side
// traffic (model catalogue fetches, autoupdate, plugins installed from npm,
// LSP downloads, Claude Code's files), and npm offline. Append it to an environment.
func Env(m *claudetest.Model, home string) []string {
	return EnvConfig(Config(m), home)
}

// EnvConfig is Env with an opencode.json of the caller's (Config(m),
// changed).
func EnvConfig(cfg map[string]any, home string) []string {
	b, err := json.Marshal(cfg)
	if err != nil {
		panic("opencodetest: config: " + err.Error())
	}
	return []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"OPENCODE_CONFIG_CONTENT=" + string(b),
		// A workspace's own opencode.json could add providers.
		"OPENCODE_DISABLE_PROJECT_CONFIG=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_PURE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
		// opencode installs @opencode-ai/plugin into each config directory
		// (~/.config/opencode) in the background with npm's Arborist, which
		// reads npm's config from the environment: offline, it fetches
		// nothing from the registry (and fails, which opencode only logs).
		"npm_config_offline=true",
		// Anthropic's key is the config's; none of the caller's.
		"ANTHROPIC_API_KEY=sk-ant-opencodetest",
		"ANTHROPIC_BASE_URL=" + baseURL(cfg),
	}
}

func baseURL(cfg map[string]any) string {
	p, _ := cfg["provider"].(map[string]any)
	a, _ := p["anthropic"].(map[string]any)
	o, _ := a["options"].(map[string]any)
	s, _ := o["baseURL"].(string)
	return s
}

// Binary is the path of opencode: $TEXTSLASH_TEST_OPENCODE_BIN
// (natstest.Program).
func Binary(t testing.TB) string {
	t.Helper()
	return natstest.Program(t, "TEXTSLASH_TEST_OPENCODE_BIN", "opencode-linux-x64/bin/opencode", "opencode")
}
