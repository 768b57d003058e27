package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/geminitest"
	"github.com/textslash/textslash/runner/openaitest"
	"github.com/textslash/textslash/runner/opencodetest"
	"github.com/textslash/textslash/runner/sandbox"
)

// The ACP agent's tests run against each real agent there is a scripted
// model API for: Codex (codex-acp, openaitest's Responses API) and Gemini
// CLI (geminitest's Gemini API). A kit speaks for one: its model answers
// turns scripted alike for both, and says what the model was sent.

// kitTurn is one scripted answer of the model: a shell command (the
// agent's own shell tool), or text, answered after a delay.
type kitTurn struct {
	shell, text string
	after       time.Duration
}

func shellTurn(cmd string) kitTurn { return kitTurn{shell: cmd} }
func textTurn(s string) kitTurn    { return kitTurn{text: s} }

// acpKit is one ACP agent under test.
type acpKit struct {
	name string
	who  string // how questions name it
	// deniedAsksModel: after a no the agent asks the model again (Gemini
	// tells it the call was cancelled); Codex ends the turn.
	deniedAsksModel bool
	// planMode: the agent has a plan mode of its own (session modes).
	planMode bool
	// tokens, cost: the agent reports the turn's tokens, its cost in
	// dollars.
	tokens, cost bool
	start        func(t *testing.T, turns ...kitTurn) *kitModel
}

// kitModel is a kit's scripted model and the agent pointed at it.
type kitModel struct {
	agent *ACP
	// run is a Run of text in mode in a fresh workspace, its programs told
	// where the model is.
	run func(text, mode string) (*Run, func() []string)
	// requests is how many main-conversation requests came; sent is the
	// text of everything main request i carried, prompt its last user
	// message's.
	requests     func() int
	sent, prompt func(i int) string
}

var acpKits = []acpKit{
	{name: "codex", who: "Codex", start: codexKit},
	{name: "gemini", who: "Gemini", deniedAsksModel: true, planMode: true, tokens: true, start: geminiKit},
	{name: "opencode", who: "Opencode", tokens: true, cost: true, start: opencodeKit},
}

// eachKit runs test for each agent.
func eachKit(t *testing.T, test func(t *testing.T, k acpKit)) {
	for _, k := range acpKits {
		t.Run(k.name, func(t *testing.T) { test(t, k) })
	}
}

// kitRun is claudeRun's Run with command's environment extra, and the
// home made first by mkHome (the agent user's, as a person's is).
func kitRun(t *testing.T, text, mode string, extra func(home string) []string) (*Run, func() []string) {
	r, progress := claudeRun(t, text)
	u, err := sandbox.LookupUser(claudetest.AgentUser(t))
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(filepath.Dir(r.Dir), "home")
	r.Command = sandbox.CommandFunc(r.Dir, home, u, true, extra(home)...)
	r.Job.Mode = mode
	return r, progress
}

// ownedDir makes dir as the agent user's.
func ownedDir(t *testing.T, dir string) {
	u, err := sandbox.LookupUser(claudetest.AgentUser(t))
	if err == nil {
		err = os.MkdirAll(dir, 0o700)
	}
	if err == nil && u != nil {
		err = os.Chown(dir, int(u.UID), int(u.GID))
	}
	if err != nil {
		t.Fatal(err)
	}
}

func codexKit(t *testing.T, turns ...kitTurn) *kitModel {
	var script []openaitest.Turn
	for _, k := range turns {
		tr := openaitest.Text(k.text)
		if k.shell != "" {
			tr = openaitest.ToolCall("exec_command", map[string]any{"cmd": k.shell})
		}
		script = append(script, tr.After(k.after))
	}
	m := openaitest.NewModel(t, script...)
	a, _ := NamedACP(contract.AgentCodex, openaitest.Binary(t))
	a.Args = append(a.Args, openaitest.Args(m)...)
	items := func(i int) []openaitest.Item { return m.MainRequests()[i].Input }
	return &kitModel{
		agent: a,
		run: func(text, mode string) (*Run, func() []string) {
			return kitRun(t, text, mode, func(home string) []string {
				ownedDir(t, filepath.Join(home, ".codex"))
				return openaitest.Env(m, filepath.Join(home, ".codex"))
			})
		},
		requests: func() int { return len(m.MainRequests()) },
		sent: func(i int) string {
			var all []string
			for _, it := range items(i) {
				all = append(all, it.Text())
			}
			return strings.Join(all, "|")
		},
		prompt: func(i int) string {
			in := items(i)
			for j := len(in) - 1; j >= 0; j-- {
				if in[j].Type == "message" && in[j].Role == "user" {
					return in[j].Text()
				}
			}
			return ""
		},
	}
}

func geminiKit(t *testing.T, turns ...kitTurn) *kitModel {
	var script []geminitest.Turn
	for _, k := range turns {
		tr := geminitest.Text(k.text)
		if k.shell != "" {
			tr = geminitest.ToolCall("run_shell_command", map[string]any{"command": k.shell, "description": "a command"})
		}
		script = append(script, tr.After(k.after))
	}
	m := geminitest.NewModel(t, script...)
	a, _ := NamedACP(contract.AgentGemini, geminitest.Binary(t))
	texts := func(cs []geminitest.Content) string {
		var all []string
		for _, c := range cs {
			for _, p := range c.Parts {
				all = append(all, p.Text)
			}
		}
		return strings.Join(all, "|")
	}
	return &kitModel{
		agent: a,
		run: func(text, mode string) (*Run, func() []string) {
			return kitRun(t, text, mode, func(home string) []string {
				geminitest.WriteSettings(t, home)
				return geminitest.Env(m)
			})
		},
		requests: func() int { return len(m.MainRequests()) },
		sent:     func(i int) string { return texts(m.MainRequests()[i].Contents) },
		prompt: func(i int) string {
			cs := m.MainRequests()[i].Contents
			for j := len(cs) - 1; j >= 0; j-- {
				if cs[j].Role == "user" && texts(cs[j:j+1]) != "" {
					return texts(cs[j : j+1])
				}
			}
			return ""
		},
	}
}

// opencodeKit runs opencode against claudetest's Anthropic API, with a
// config that says nothing of permissions: NamedACP's own settings must
// make it ask.
func opencodeKit(t *testing.T, turns ...kitTurn) *kitModel {
	var script []claudetest.Turn
	for _, k := range turns {
		tr := claudetest.Text(k.text)
		if k.shell != "" {
			tr = claudetest.ToolUse("bash", map[string]string{"command": k.shell, "description": "a command"})
		}
		script = append(script, tr.After(k.after))
	}
	m := claudetest.NewModel(t, script...)
	a, _ := NamedACP(contract.AgentOpencode, opencodetest.Binary(t))
	cfg := opencodetest.Config(m)
	delete(cfg, "permission")
	texts := func(ms []claudetest.Message) string {
		var all []string
		for _, msg := range ms {
			for _, b := range msg.Content {
				all = append(all, b.Text+b.ResultText())
			}
		}
		return strings.Join(all, "|")
	}
	return &kitModel{
		agent: a,
		run: func(text, mode string) (*Run, func() []string) {
			return kitRun(t, text, mode, func(home string) []string {
				return opencodetest.EnvConfig(cfg, home)
			})
		},
		requests: func() int { return len(m.MainRequests()) },
		sent:     func(i int) string { return texts(m.MainRequests()[i].Messages) },
		prompt: func(i int) string {
			ms := m.MainRequests()[i].Messages
			for j := len(ms) - 1; j >= 0; j-- {
				if ms[j].Role == "user" && texts(ms[j:j+1]) != "" {
					return texts(ms[j : j+1])
				}
			}
			return ""
		},
	}
}
