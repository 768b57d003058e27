package agent

import (
	"strings"

	"github.com/coder/acp-go-sdk"

	"github.com/textslash/textslash/contract"
)

// An ACP agent's tool calls are told by their kind (read, edit, execute,
// fetch, …), a title of the agent's own and, in most agents, the raw
// input. textslash sees them as Claude Code's tools where the kind says
// which (an execute is Bash, an edit is Edit), so that questions, the
// person's "always" rules and progress lines read and work the same for
// every agent.

// acpTool is the Claude Code tool an ACP tool call is taken as, with the
// input fields textslash reads.
func acpTool(kind acp.ToolKind, title string, raw any, locs []acp.ToolCallLocation) toolCall {
	in := rawStrings(raw)
	path := first(in, pathKeys...)
	if path == "" && len(locs) > 0 {
		path = locs[0].Path
	}
	switch kind {
	case acp.ToolKindExecute:
		cmd := first(in, "command", "cmd")
		if cmd == "" {
			cmd = commandOf(raw)
		}
		if cmd == "" {
			cmd = title
		}
		return toolCall{Name: "Bash", Input: map[string]string{"command": cmd}}
	case acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove:
		return toolCall{Name: "Write", Input: map[string]string{"file_path": path}}
	case acp.ToolKindRead:
		return toolCall{Name: "Read", Input: map[string]string{"file_path": path}}
	case acp.ToolKindSearch:
		return toolCall{Name: "Grep", Input: map[string]string{"pattern": first(in, "pattern", "query")}}
	case acp.ToolKindFetch:
		if u := first(in, "url", "prompt"); strings.HasPrefix(u, "http") {
			return toolCall{Name: "WebFetch", Input: map[string]string{"url": u}}
		}
		return toolCall{Name: "WebSearch", Input: map[string]string{"query": first(in, "query", "prompt")}}
	}
	name := contract.FirstLine(title)
	if name == "" {
		name = string(kind)
	}
	return toolCall{Name: name, Input: in}
}

// pathKeys name a file in the raw input of the agents seen.
var pathKeys = []string{"file_path", "path", "filePath", "absolute_path", "filename"}

// named says whether raw names what a call of kind is about, as its
// progress line tells it: an execute's command, the file of an edit or a
// read. opencode's first tool_call of a command carries only its cwd.
func named(kind acp.ToolKind, raw any) bool {
	in := rawStrings(raw)
	switch kind {
	case acp.ToolKindExecute:
		return first(in, "command", "cmd") != "" || commandOf(raw) != ""
	case acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove, acp.ToolKindRead:
		return first(in, pathKeys...) != ""
	}
	return true
}

// askedAbout says whether calls of kind may wait for the person's yes:
// commands, changes to files, fetches.
func askedAbout(kind acp.ToolKind) bool {
	switch kind {
	case acp.ToolKindExecute, acp.ToolKindEdit, acp.ToolKindDelete, acp.ToolKindMove, acp.ToolKindFetch:
		return true
	}
	return false
}

// rawStrings are raw's string fields, when it is an object.
func rawStrings(raw any) map[string]string {
	out := map[string]string{}
	if m, ok := raw.(map[string]any); ok {
		for k, v := range m {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
	}
	return out
}

// commandOf is a command given as a list of words ({"command": ["bash",
// "-lc", "echo hi"]}, as Codex gives it): the script a shell runs, or the
// words joined.
func commandOf(raw any) string {
	m, _ := raw.(map[string]any)
	list, _ := m["command"].([]any)
	var words []string
	for _, w := range list {
		if s, ok := w.(string); ok {
			words = append(words, s)
		}
	}
	if n := len(words); n >= 3 && (words[n-2] == "-c" || words[n-2] == "-lc") {
		return words[n-1]
	}
	return strings.Join(words, " ")
}

func first(in map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(in[k]); v != "" {
			return v
		}
	}
	return ""
}

// anyInput is a toolCall's input as Question and Rule take it.
func anyInput(tc toolCall) map[string]any {
	out := make(map[string]any, len(tc.Input))
	for k, v := range tc.Input {
		out[k] = v
	}
	return out
}

// optionOf is the id of the first of opts of one of kinds, in the order
// kinds gives; "" when there is none.
func optionOf(opts []acp.PermissionOption, kinds ...acp.PermissionOptionKind) acp.PermissionOptionId {
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k {
				return o.OptionId
			}
		}
	}
	return ""
}

// permissionAnswer is the outcome of a permission request, given the
// decision (contract.AnswerAllow, AnswerAlways or AnswerDeny). An
// "always" is textslash's own rule (the runner keeps it and allows what
// it covers without asking), so the agent is told allow once: its own
// "always" may cover more than the person agreed to. A request offering
// no option of the kind needed is cancelled.
func permissionAnswer(opts []acp.PermissionOption, decision string) acp.RequestPermissionResponse {
	var id acp.PermissionOptionId
	if decision == contract.AnswerDeny {
		id = optionOf(opts, acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways)
	} else {
		id = optionOf(opts, acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways)
	}
	if id == "" {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(id)}
}
