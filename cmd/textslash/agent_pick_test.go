package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/claudetest"
)

// As root, Claude Code asked for without an agent user is refused at start
// in one plain line that names the variable to set, with the exit status of
// a bad setting.
func TestClaudeAsRootNamesTheAgentUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: Claude Code is refused as root only")
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve")
	cmd.Env = append(os.Environ(), "TEXTSLASH_DATA="+t.TempDir(), "PORT="+freePort(t),
		"TEXTSLASH_NATS_LISTEN=127.0.0.1:"+freePort(t), "TEXTSLASH_LOG_FORMAT=json",
		"TEXTSLASH_AGENT=claude", "TEXTSLASH_CLAUDE_BIN="+claudetest.Binary(t), "TEXTSLASH_AGENT_USER=")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit status %d (%v); want 2, a setting refused:\n%s", code, err, out)
	}
	last := lastLine(string(out))
	if !strings.Contains(last, "TEXTSLASH_AGENT_USER") || strings.HasPrefix(last, "{") {
		t.Errorf("last line %q; want a plain line naming TEXTSLASH_AGENT_USER", last)
	}
}

// Start-up says in one line which agent runs, and when Claude Code is
// installed but not picked, why and what to set.
func TestStartSaysWhichAgentRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the shell is picked over an installed Claude Code as root only")
	}
	claude := "TEXTSLASH_CLAUDE_BIN=" + claudetest.Binary(t)
	cases := []struct {
		name string
		env  []string
		want []string
	}{
		{"claude installed, no agent user", []string{claude, "TEXTSLASH_AGENT_USER="},
			[]string{"agent: shell", "Claude Code is installed", "TEXTSLASH_AGENT_USER"}},
		{"the shell asked for", []string{claude, "TEXTSLASH_AGENT=shell"}, []string{"agent: shell", "TEXTSLASH_AGENT=shell"}},
	}
	if u := claudetest.AgentUser(t); u != "" {
		cases = append(cases, struct {
			name string
			env  []string
			want []string
		}{"claude with an agent user", []string{claude, "TEXTSLASH_AGENT_USER=" + u}, []string{"agent: claude", u}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inst := startServe(t, c.env...)
			inst.stop()
			b, err := os.ReadFile(inst.Log)
			if err != nil {
				t.Fatal(err)
			}
			var said []string
			for _, line := range strings.Split(string(b), "\n") {
				var l struct{ Message string }
				if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Message, "agent: ") {
					said = append(said, l.Message)
				}
			}
			if len(said) != 1 {
				t.Fatalf("lines about the agent %q; want one", said)
			}
			for _, w := range c.want {
				if !strings.Contains(said[0], w) {
					t.Errorf("%q; want it to say %q", said[0], w)
				}
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// A typo in TEXTSLASH_AGENT (claud) is refused at start in one plain line
// naming the variable and what was not found, not taken as a command
// line that fails every message with exit code 127.
func TestAgentTypoRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve")
	cmd.Env = append(os.Environ(), "TEXTSLASH_DATA="+t.TempDir(), "PORT="+freePort(t),
		"TEXTSLASH_NATS_LISTEN=127.0.0.1:"+freePort(t), "TEXTSLASH_LOG_FORMAT=json", "TEXTSLASH_AGENT=claud")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit status %d (%v); want 2, a setting refused:\n%s", code, err, out)
	}
	last := lastLine(string(out))
	if !strings.Contains(last, `TEXTSLASH_AGENT="claud"`) || !strings.Contains(last, "no program claud") || strings.HasPrefix(last, "{") {
		t.Errorf("last line %q; want a plain line naming TEXTSLASH_AGENT and the program claud not found", last)
	}
}

// Claude Code with no credentials a run can see (no API key, no OAuth
// token, a fresh home): the start warns and says how to fix it, and a
// message's reply says the CLI's reason, not "Something went wrong".
func TestClaudeNotLoggedIn(t *testing.T) {
	model := claudetest.NewModel(t, claudetest.Text("never said"))
	inst := startClaude(t, model, "ANTHROPIC_API_KEY=", "CLAUDE_CODE_OAUTH_TOKEN=")
	natstest.CheckFor(t, time.Minute, 20*time.Millisecond, func() error {
		b, err := os.ReadFile(inst.Log)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			var l struct{ Level, Message string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Level == "warn" &&
				strings.Contains(l.Message, "not logged in") && strings.Contains(l.Message, "CLAUDE_CODE_OAUTH_TOKEN") &&
				strings.Contains(l.Message, "claude setup-token") && strings.Contains(l.Message, "ANTHROPIC_API_KEY") {
				return nil
			}
		}
		return errors.New("no warning at start that Claude Code is not logged in, with the fix")
	})
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := c.ask(c.events(ctx), "hello")
	t.Logf("reply: %s", done.Text)
	if done.Status != contract.StatusError || !strings.Contains(done.Text, "Not logged in") ||
		!strings.Contains(done.Text, "CLAUDE_CODE_OAUTH_TOKEN") || strings.Contains(done.Text, "Something went wrong") {
		t.Errorf("reply %q (%s); want an error saying Not logged in and how to fix it", done.Text, done.Status)
	}
	if n := len(model.MainRequests()); n != 0 {
		t.Errorf("the model got %d requests; want none", n)
	}
}
