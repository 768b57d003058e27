// Running codex-acp against the stand-in: its configuration (Args), its
// environment (Env), where its binary is (Binary) and the user it runs as
// under root (AgentUser).

package openaitest

import (
	"os/user"
	"strconv"
	"testing"

	"github.com/textslash/textslash/natstest"
)

// Provider is the name of the model provider Args configures.
const Provider = "openaitest"

// APIKey is the key Env gives Codex, sent to m as a bearer token.
const APIKey = "sk-openaitest"

// Args are codex-acp's -c overrides making m its only model provider,
// without retries (an API error fails the turn at once) and without side
// traffic: no update checks, analytics or feedback uploads.
func Args(m *Model) []string {
	p := "model_providers." + Provider + "."
	kv := []string{
		"model_provider=" + strconv.Quote(Provider),
		p + "name=" + strconv.Quote(Provider),
		p + "base_url=" + strconv.Quote(m.URL()+"/v1"),
		p + "env_key=" + strconv.Quote("OPENAI_API_KEY"),
		p + "wire_api=" + strconv.Quote("responses"),
		p + "request_max_retries=0",
		p + "stream_max_retries=0",
		p + "supports_websockets=false",
		"check_for_update_on_startup=false",
		"analytics.enabled=false",
		"feedback.enabled=false",
	}
	var args []string
	for _, s := range kv {
		args = append(args, "-c", s)
	}
	return args
}

// AskEveryCommand are -c overrides running Codex's commands without its
// own sandbox, each asking for approval first (session/request_permission
// over ACP) unless Codex knows it to be read-only (ls, cat, ...):
// sandbox_mode danger-full-access, approval_policy untrusted. So a test's
// commands behave the same wherever it runs. Codex's Linux sandbox
// (bubblewrap re-executing Codex as codex-linux-sandbox, a link it makes in
// CODEX_HOME) fails when CODEX_HOME is under /tmp: codex-acp 0.16.0 refuses
// to make the link there ("Refusing to create helper binaries under
// temporary dir"), and a sandboxed command fails with "bwrap: execvp
// codex-linux-sandbox". Elsewhere (/var/tmp) it works, in codex-acp's own
// modes: read-only fails writes ("Read-only file system") without asking,
// unless the model asks for sandbox_permissions "require_escalated"; auto
// writes in the workspace without asking. With these overrides
// session/new offers no modes (its modes is null): the pair is none of
// codex-acp's presets.
func AskEveryCommand() []string {
	return []string{"-c", `sandbox_mode="danger-full-access"`, "-c", `approval_policy="untrusted"`}
}

// Env is the environment Codex needs besides Args: the API key (the
// provider's env_key; no ACP authenticate is needed), and codexHome as
// CODEX_HOME (its sessions, logs and state databases; a temporary
// directory, so that nothing of the machine's ~/.codex is read).
// OPENAI_BASE_URL points Codex's built-in openai provider at m too, should
// anything use it: with Args nothing does in codex-acp 0.16.0.
func Env(m *Model, codexHome string) []string {
	return []string{
		"OPENAI_API_KEY=" + APIKey,
		"CODEX_HOME=" + codexHome,
		"OPENAI_BASE_URL=" + m.URL() + "/v1",
	}
}

// Binary is the path of codex-acp: $TEXTSLASH_TEST_CODEX_ACP_BIN
// (natstest.Program).
func Binary(t testing.TB) string {
	t.Helper()
	return natstest.Program(t, "TEXTSLASH_TEST_CODEX_ACP_BIN", ".bin/codex-acp", "codex-acp")
}

// AgentUser is the OS user to run codex-acp as when the test runs as root
// (natstest.AgentUser), nil when it does not.
func AgentUser(t testing.TB) *user.User {
	t.Helper()
	name := natstest.AgentUser(t)
	if name == "" {
		return nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
