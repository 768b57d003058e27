package agent

import (
	"path/filepath"
	"strings"

	"github.com/textslash/textslash/contract"
)

// progressLine says in a few words what a tool call does.
func progressLine(tc toolCall, dir string) string {
	in := tc.Input
	detail := func(keys ...string) string {
		for _, k := range keys {
			if v := contract.CutRunes(contract.FirstLine(in[k]), progressRunes); v != "" {
				return v
			}
		}
		return ""
	}
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	switch tc.Name {
	case "Bash":
		if cmd := detail("command"); cmd != "" {
			return "Running `" + cmd + "`"
		}
		return "Running a command"
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		return "Editing " + or(contract.CutRunes(relTo(dir, contract.FirstLine(or(in["file_path"], in["notebook_path"]))), progressRunes), "a file")
	case "Read":
		return "Reading " + or(contract.CutRunes(relTo(dir, contract.FirstLine(in["file_path"])), progressRunes), "a file")
	case "Grep", "Glob":
		return "Searching for " + or(detail("pattern"), "files")
	case "WebFetch":
		return "Fetching " + or(detail("url"), "a web page")
	case "WebSearch":
		return "Searching the web for " + or(detail("query"), "something")
	case "TodoWrite":
		return "Planning"
	case "Task", "Agent":
		return "Delegating: " + or(detail("description", "prompt"), "a subtask")
	default:
		return "Using " + or(contract.CutRunes(contract.FirstLine(tc.Name), progressRunes), "a tool")
	}
}

// relTo shows path relative to dir when it lies inside dir.
func relTo(dir, path string) string {
	if dir == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}
