package agent

import (
	"strings"
	"testing"
)

// What an "always" allows: the same tool use again, simple commands with
// the same start, every edit after an edit; never a command smuggled
// behind an allowed start.
func TestAlwaysRule(t *testing.T) {
	bash := func(cmd string) map[string]any { return map[string]any{"command": cmd} }
	npm := ruleFor("Bash", bash("npm install left-pad"), "npm install:*")
	redirect := ruleFor("Bash", bash("echo three >> three.txt"), "")
	edit := ruleFor("Write", map[string]any{"file_path": "/w/a.txt"}, "")
	fetch := ruleFor("WebFetch", map[string]any{"url": "https://example.com/a"}, "")
	for _, c := range []struct {
		name  string
		r     Rule
		tool  string
		input map[string]any
		want  bool
	}{
		{"same command", npm, "Bash", bash("npm install left-pad"), true},
		{"same prefix", npm, "Bash", bash("npm install react"), true},
		{"prefix alone", npm, "Bash", bash("npm install"), true},
		{"longer word", npm, "Bash", bash("npm installer"), false},
		{"other command", npm, "Bash", bash("npm publish"), false},
		{"chained", npm, "Bash", bash("npm install x; rm -rf ~"), false},
		{"substitution", npm, "Bash", bash("npm install $(curl evil)"), false},
		{"piped", npm, "Bash", bash("npm install x | sh"), false},
		{"other tool", npm, "Write", map[string]any{"file_path": "/w/a"}, false},
		{"the same redirection", redirect, "Bash", bash("echo three >> three.txt"), true},
		{"another redirection", redirect, "Bash", bash("echo three >> ~/.bashrc"), false},
		{"edit after write", edit, "Edit", map[string]any{"file_path": "/w/b.txt"}, true},
		{"write after write", edit, "Write", map[string]any{"file_path": "/w/c.txt"}, true},
		{"bash after write", edit, "Bash", bash("ls"), false},
		{"same host", fetch, "WebFetch", map[string]any{"url": "https://EXAMPLE.com/b"}, true},
		{"other host", fetch, "WebFetch", map[string]any{"url": "https://example.org/"}, false},
	} {
		if got := c.r.allows(c.tool, c.input); got != c.want {
			t.Errorf("%s: %+v allows %s %v = %v; want %v", c.name, c.r, c.tool, c.input, got, c.want)
		}
	}
}

// A session's always rules are kept for that session only.
func TestAllowListPerSession(t *testing.T) {
	path := t.TempDir() + "/always/web.u.json"
	l := LoadAllowList(path, "s1")
	if err := l.Add("s1", ruleFor("Bash", map[string]any{"command": "make test"}, "make test:*")); err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"command": "make test"}
	if !LoadAllowList(path, "s1").Allows("Bash", in) {
		t.Error("a later run of session s1 does not allow make test")
	}
	if LoadAllowList(path, "s2").Allows("Bash", in) || LoadAllowList(path, "").Allows("Bash", in) {
		t.Error("a new session allows what s1 was allowed")
	}
}

// A command is shown as one Markdown code span whatever backticks it
// holds: the span's fence is longer than any run of backticks inside, and
// a command starting or ending with one is padded with a space.
func TestQuestionTextCodeSpan(t *testing.T) {
	for _, tt := range []struct{ command, want string }{
		{"npm test", "run `npm test` in"},
		{"echo `date`", "run `` echo `date` `` in"},
		{"echo ``x``", "run ``` echo ``x`` ``` in"},
		{"`whoami`", "run `` `whoami` `` in"},
	} {
		got := questionText("Claude", "Bash", map[string]any{"command": tt.command}, "/w")
		if !strings.Contains(got, tt.want) {
			t.Errorf("command %q: %q; want it to contain %q", tt.command, got, tt.want)
		}
	}
}
