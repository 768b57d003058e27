package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/geminitest"
	"github.com/textslash/textslash/runner/openaitest"
	"github.com/textslash/textslash/runner/opencodetest"
)

// BenchmarkFollowUpACP is BenchmarkFollowUp (homes kept, as root) with an
// agent spoken to over the Agent Client Protocol: Gemini CLI
// (TEXTSLASH_AGENT=gemini) and Codex (codex-acp, as acp:<its command line>
// with the scripted provider's settings) and opencode
// (TEXTSLASH_AGENT=opencode, on claudetest's Anthropic API), each against its scripted model
// API: webhook (web chat POST) → the model's request for a first message
// and a follow-up, and CPU per follow-up outside the model. It fails when
// a warm agent was started more than once per home.
//
//	go test -run '^$' -bench FollowUpACP -benchtime 1x ./cmd/textslash/
func BenchmarkFollowUpACP(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	b.Run("gemini", func(b *testing.B) {
		n := b.N * followUpPeople * (1 + followUpsEach)
		turns := make([]geminitest.Turn, n)
		for i := range turns {
			turns[i] = geminitest.Text("ok " + strconv.Itoa(i))
		}
		model := geminitest.NewModel(b, turns...)
		env := append([]string{"TEXTSLASH_AGENT=gemini", "TEXTSLASH_AGENT_BIN=" + geminitest.Binary(b)}, geminitest.Env(model)...)
		benchACP(b, env, scripted{turns: model.Turns, at: func(turn int) (time.Time, bool) {
			for _, r := range model.MainRequests() {
				if r.Turn == turn {
					return r.At, true
				}
			}
			return time.Time{}, false
		}})
	})
	b.Run("opencode", func(b *testing.B) {
		n := b.N * followUpPeople * (1 + followUpsEach)
		turns := make([]claudetest.Turn, n)
		for i := range turns {
			turns[i] = claudetest.Text("ok " + strconv.Itoa(i))
		}
		model := claudetest.NewModel(b, turns...)
		// opencodetest's environment, but for what a run does not get from
		// textslash's (HOME and XDG_ are the home's).
		env := []string{"TEXTSLASH_AGENT=opencode", "TEXTSLASH_AGENT_BIN=" + opencodetest.Binary(b)}
		for _, kv := range opencodetest.Env(model, "/nonexistent") {
			if strings.HasPrefix(kv, "OPENCODE_") || strings.HasPrefix(kv, "ANTHROPIC_") {
				env = append(env, kv)
			}
		}
		benchACP(b, env, scripted{turns: model.Turns, at: func(turn int) (time.Time, bool) {
			for _, r := range model.MainRequests() {
				if r.Turn == turn {
					return r.At, true
				}
			}
			return time.Time{}, false
		}})
	})
	b.Run("codex", func(b *testing.B) {
		n := b.N * followUpPeople * (1 + followUpsEach)
		turns := make([]openaitest.Turn, n)
		for i := range turns {
			turns[i] = openaitest.Text("ok " + strconv.Itoa(i))
		}
		model := openaitest.NewModel(b, turns...)
		line := []string{openaitest.Binary(b)}
		for _, a := range append(openaitest.AskEveryCommand(), openaitest.Args(model)...) {
			line = append(line, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
		// OPENAI_BASE_URL, unused by Codex with these settings, makes the
		// runner reach the model's address from the homes.
		env := []string{"TEXTSLASH_AGENT=acp:" + strings.Join(line, " "), "OPENAI_API_KEY=" + openaitest.APIKey, "OPENAI_BASE_URL=" + model.URL() + "/v1"}
		benchACP(b, env, scripted{turns: model.Turns, at: func(turn int) (time.Time, bool) {
			for _, r := range model.MainRequests() {
				if r.Turn == turn {
					return r.At, true
				}
			}
			return time.Time{}, false
		}})
	})
}

// benchACP runs BenchmarkFollowUp's rounds on textslash started with env.
func benchACP(b *testing.B, env []string, m scripted) {
	env = append(env, "TEXTSLASH_LOG_LEVEL=info", "TEXTSLASH_DEFAULT_MODE=auto")
	if u := claudetest.AgentUser(b); u != "" {
		env = append(env, "TEXTSLASH_AGENT_USER="+u)
	}
	tree := newProcTree(b)
	inst := startServe(b, env...)
	tree.root = inst.cmd.Process.Pid
	checkHomes(b, inst, true)
	followUps(b, inst, tree, m, true)
	var starts []string
	for _, l := range logLines(b, inst, "acp: agent started") {
		if strings.Contains(l, `"subject":`) { // a run's, not the start-up check's
			starts = append(starts, l)
		}
	}
	checkStarts(b, starts, b.N*followUpPeople, inst, "acp:")
}
