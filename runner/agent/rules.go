package agent

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/textslash/textslash/contract"
)

// Question is a tool use the agent asks the person's permission for.
type Question struct {
	Tool  string
	Input map[string]any
	// Rule is what "always" allows from now on (see Rule).
	Rule Rule
	// Text is the question as the person reads it.
	Text string
	// Session is the agent session asking: "always" lasts as long as it.
	Session string
}

// Answer is the person's answer to a Question.
type Answer struct {
	// Decision is contract.AnswerAllow, AnswerAlways or AnswerDeny.
	Decision string
	// Text is what the agent is told with a denial.
	Text string
}

// Rule is what an "always" allows for the rest of the session: every use
// of Tool (edits: all of Edit, Write, MultiEdit and NotebookEdit), or for
// Bash that Command again and the simple commands starting with Prefix,
// for WebFetch the URLs of Host.
type Rule struct {
	Tool    string `json:"tool"`
	Command string `json:"command,omitempty"`
	Prefix  string `json:"prefix,omitempty"`
	Host    string `json:"host,omitempty"`
}

// editTools are the tools that change files: one "always" covers them all,
// as Claude Code's acceptEdits does.
var editTools = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}

// ruleFor is the rule an "always" to this tool use adds. suggested is
// Claude Code's own suggestion for Bash ("npm install:*"), if any.
func ruleFor(tool string, input map[string]any, suggested string) Rule {
	switch {
	case slices.Contains(editTools, tool):
		return Rule{Tool: "Edit"}
	case tool == "Bash":
		p := strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(suggested, "*"), ":"))
		cmd := strings.TrimSpace(str(input["command"]))
		if p == "" {
			p, _, _ = strings.Cut(cmd, " ")
		}
		return Rule{Tool: tool, Command: cmd, Prefix: p}
	case tool == "WebFetch":
		return Rule{Tool: tool, Host: host(str(input["url"]))}
	}
	return Rule{Tool: tool}
}

// allows reports whether r covers this tool use.
func (r Rule) allows(tool string, input map[string]any) bool {
	switch {
	case r.Tool == "Edit":
		return slices.Contains(editTools, tool)
	case r.Tool != tool:
		return false
	case tool == "Bash":
		cmd := strings.TrimSpace(str(input["command"]))
		if cmd == r.Command {
			return true
		}
		// A prefix of whole words, and one simple command: not
		// "npm install; rm -rf ~", nor a redirection over a file.
		return r.Prefix != "" && (cmd == r.Prefix || strings.HasPrefix(cmd, r.Prefix+" ")) &&
			!strings.ContainsAny(cmd, ";&|`$()<>\n")
	case tool == "WebFetch":
		return r.Host != "" && host(str(input["url"])) == r.Host
	}
	return true
}

func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// questionText is how the person is asked about a tool use by the agent
// who ("Claude", "Gemini").
func questionText(who, tool string, input map[string]any, dir string) string {
	path := func() string {
		p := str(input["file_path"])
		if p == "" {
			p = str(input["notebook_path"])
		}
		return contract.CutRunes(relTo(dir, p), 200)
	}
	var what string
	switch tool {
	case "Bash":
		what = "run " + codeSpan(contract.CutRunes(strings.TrimSpace(str(input["command"])), 300)) + " in your workspace"
	case "Write":
		what = "write " + path()
	case "Edit", "MultiEdit", "NotebookEdit":
		what = "edit " + path()
	case "WebFetch":
		what = "fetch " + contract.CutRunes(str(input["url"]), 200)
	case "WebSearch":
		what = "search the web for “" + contract.CutRunes(str(input["query"]), 200) + "”"
	default:
		what = "use " + contract.CutRunes(tool, 80)
	}
	return who + " wants to " + what + ". " + contract.QuestionPrompt
}

// codeSpan is s as one Markdown code span, however many backticks it
// holds: fenced by a run of backticks longer than any in s, and padded
// with a space where s starts or ends with one (CommonMark strips one
// space each side).
func codeSpan(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// AllowList is a person's "always" rules for their current agent session,
// kept where the agent cannot reach them (outside its sandbox, readable
// by textslash alone): an agent must never grant itself permissions.
type AllowList struct {
	path string

	mu      sync.Mutex
	Session string `json:"session"`
	Rules   []Rule `json:"rules"`
}

// LoadAllowList reads the rules kept for session; a new session starts
// with none.
func LoadAllowList(path, session string) *AllowList {
	l := &AllowList{path: path}
	if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, l) == nil && session != "" && l.Session == session {
		return l
	}
	return &AllowList{path: path}
}

// Allows reports whether one of the rules kept covers this tool use.
func (l *AllowList) Allows(tool string, input map[string]any) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.Rules, func(r Rule) bool { return r.allows(tool, input) })
}

// Add keeps r for session.
func (l *AllowList) Add(session string, r Rule) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if session != l.Session {
		l.Session, l.Rules = session, nil
	}
	if !slices.Contains(l.Rules, r) {
		l.Rules = append(l.Rules, r)
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(l.path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(l.path, b, 0o600)
}
