package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
)

// streamEvent is what one line of Claude Code's stream-json output says.
type streamEvent struct {
	Type      string // "system", "assistant", "user", "result", ...
	Subtype   string // "init", "success", "error_max_turns", ...
	SessionID string
	Subagent  bool // from a subagent: parent_tool_use_id is set

	// assistant
	Text  string     // its text blocks, joined by blank lines
	Tools []toolCall // its tool_use blocks
	// APIError is set on the message the CLI makes of a failed API call:
	// "authentication_failed" (apiErrorAuth), "rate_limit", ...
	APIError string

	// user: the tool uses its tool_result blocks answer
	ToolResults []string

	// result
	Result  string
	IsError bool
	// Total is the session's running total (total_cost_usd, modelUsage);
	// Since what this process counted since its previous result
	// (model_usage_since_last_result), nil when the CLI does not say.
	Total Usage
	Since *Usage

	// control_request
	RequestID string
	Request   *controlRequest
}

// apiErrorAuth is the assistant message's error when the CLI could not
// authenticate: no credentials ("Not logged in · Please run /login"), or
// a key or token the API refused ("Invalid API key · …").
const apiErrorAuth = "authentication_failed"

// controlRequest is the request of a control_request line.
type controlRequest struct {
	Subtype     string                       `json:"subtype"`
	Tool        string                       `json:"tool_name"`
	ToolUseID   string                       `json:"tool_use_id"`
	Input       map[string]any               `json:"input"`
	Suggestions []map[string]json.RawMessage `json:"permission_suggestions"`
}

// bashRule is the command prefix Claude Code suggests allowing, if any
// ("npm install:*").
func (r *controlRequest) bashRule() string {
	for _, sug := range r.Suggestions {
		var rules []struct {
			Tool    string `json:"toolName"`
			Content string `json:"ruleContent"`
		}
		if jsonString(sug["type"]) == "addRules" && json.Unmarshal(sug["rules"], &rules) == nil {
			for _, ru := range rules {
				if ru.Tool == "Bash" && ru.Content != "" {
					return ru.Content
				}
			}
		}
	}
	return ""
}

// sessionSuggestions are Claude Code's suggestions, kept for this process
// only: nothing is written to the workspace's settings.
func (r *controlRequest) sessionSuggestions() []map[string]json.RawMessage {
	out := make([]map[string]json.RawMessage, 0, len(r.Suggestions))
	for _, sug := range r.Suggestions {
		c := maps.Clone(sug)
		c["destination"] = json.RawMessage(`"session"`)
		out = append(out, c)
	}
	return out
}

// toolCall is one tool_use block.
type toolCall struct {
	ID    string
	Name  string
	Input map[string]string // the input's string fields
}

// parseStreamLine reads one stream-json line. It fails on anything but a
// JSON object with a type; fields of unexpected types are ignored.
func parseStreamLine(line []byte) (streamEvent, error) {
	var ev streamEvent
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return ev, fmt.Errorf("stream line: %w", err)
	}
	if top == nil {
		return ev, errors.New("stream line: not an object")
	}
	ev.Type = jsonString(top["type"])
	if ev.Type == "" {
		return ev, errors.New("stream line: no type")
	}
	ev.Subtype = jsonString(top["subtype"])
	ev.SessionID = jsonString(top["session_id"])
	ev.Subagent = jsonString(top["parent_tool_use_id"]) != ""

	switch ev.Type {
	case "assistant":
		ev.parseAssistant(top["message"])
		ev.APIError = jsonString(top["error"])
	case "user":
		ev.ToolResults = toolResults(top["message"])
	case "result":
		ev.parseResult(top)
	case "control_request":
		ev.parseControlRequest(top)
	}
	return ev, nil
}

// parseAssistant reads an assistant message: its text blocks and its
// tool_use blocks.
func (ev *streamEvent) parseAssistant(message json.RawMessage) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(message, &msg) != nil {
		return
	}
	var blocks []map[string]json.RawMessage
	if json.Unmarshal(msg["content"], &blocks) != nil {
		ev.Text = jsonString(msg["content"]) // content may be a plain string
		return
	}
	var texts []string
	for _, b := range blocks {
		switch jsonString(b["type"]) {
		case "text":
			if t := jsonString(b["text"]); t != "" {
				texts = append(texts, t)
			}
		case "tool_use":
			ev.Tools = append(ev.Tools, parseToolUse(b))
		}
	}
	ev.Text = strings.Join(texts, "\n\n")
}

// parseToolUse reads a tool_use block, keeping its input's string fields.
func parseToolUse(b map[string]json.RawMessage) toolCall {
	tc := toolCall{ID: jsonString(b["id"]), Name: jsonString(b["name"]), Input: map[string]string{}}
	var in map[string]json.RawMessage
	_ = json.Unmarshal(b["input"], &in)
	for k, v := range in {
		if s := jsonString(v); s != "" {
			tc.Input[k] = s
		}
	}
	return tc
}

// toolResults are the tool uses a user message's tool_result blocks answer.
func toolResults(message json.RawMessage) []string {
	var msg struct {
		Content []struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
		} `json:"content"`
	}
	_ = json.Unmarshal(message, &msg)
	var ids []string
	for _, b := range msg.Content {
		if b.Type == "tool_result" && b.ToolUseID != "" {
			ids = append(ids, b.ToolUseID)
		}
	}
	return ids
}

// parseResult reads a result line: its text, whether it is an error, and
// what the model did.
func (ev *streamEvent) parseResult(top map[string]json.RawMessage) {
	ev.Result = jsonString(top["result"])
	_ = json.Unmarshal(top["is_error"], &ev.IsError)
	ev.Total, _ = modelUsage(top["modelUsage"])
	ev.Total.USD = 0
	_ = json.Unmarshal(top["total_cost_usd"], &ev.Total.USD)
	if u, ok := modelUsage(top["model_usage_since_last_result"]); ok {
		ev.Since = &u
	}
}

// parseControlRequest reads a control_request line; Request stays nil
// without a request id or a request object.
func (ev *streamEvent) parseControlRequest(top map[string]json.RawMessage) {
	ev.RequestID = jsonString(top["request_id"])
	var req controlRequest
	if json.Unmarshal(top["request"], &req) == nil && ev.RequestID != "" {
		if req.Input == nil {
			req.Input = map[string]any{}
		}
		ev.Request = &req
	}
}

// Usage is what the model did: its cost in USD as Claude Code reckons
// it, and its tokens, input (with cache reads and writes) and output.
type Usage struct {
	USD float64 `json:"usd"`
	In  int     `json:"input_tokens"`
	Out int     `json:"output_tokens"`
}

func (u Usage) plus(v Usage) Usage {
	return Usage{USD: u.USD + v.USD, In: u.In + v.In, Out: u.Out + v.Out}
}

func (u Usage) minus(v Usage) Usage {
	return Usage{USD: u.USD - v.USD, In: u.In - v.In, Out: u.Out - v.Out}
}

// modelUsage sums a result's per-model usage (modelUsage and
// model_usage_since_last_result are shaped alike); ok is false when raw
// is not such an object ({} is: nothing was used).
func modelUsage(raw json.RawMessage) (u Usage, ok bool) {
	var models map[string]struct {
		In          int     `json:"inputTokens"`
		Out         int     `json:"outputTokens"`
		CacheRead   int     `json:"cacheReadInputTokens"`
		CacheCreate int     `json:"cacheCreationInputTokens"`
		USD         float64 `json:"costUSD"`
	}
	if json.Unmarshal(raw, &models) != nil || models == nil {
		return u, false
	}
	for _, m := range models {
		u = u.plus(Usage{USD: m.USD, In: m.In + m.CacheRead + m.CacheCreate, Out: m.Out})
	}
	return u, true
}

// jsonString is raw's value if it is a JSON string, else "".
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
