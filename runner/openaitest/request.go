// What the stand-in received: a Request, with the input items of a
// Responses API body decoded, and the tool outputs it carries.

package openaitest

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Request is one request the stand-in received.
type Request struct {
	Method string
	Path   string // URL path, without the query
	Query  string // raw query
	Header http.Header
	Body   []byte // as received
	// At is when the request arrived: its headers read, before its body
	// (for a client's latency to the model, as benchmarks measure it).
	At time.Time
	// Main is true for the main conversation's requests, the ones the
	// script answers; Turn is then the index of the turn that answered.
	Main bool
	Turn int

	// Decoded from a Responses API body; zero for other requests.
	Model     string
	Stream    bool
	Tools     []string          // names of the tools offered (a tool's type when it has no name)
	ToolSpecs []json.RawMessage // the tools offered, as sent
	Input     []Item
}

// Item is one input item of a Responses API request: a message, a
// function_call the model made, its function_call_output, reasoning, ...
type Item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a message's: a string or parts
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"` // function_call_output's: a string or parts
}

// Text is the text of a message's content, or of a function_call_output's
// output: the string, or its parts' texts joined.
func (it Item) Text() string {
	raw := it.Content
	if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
		raw = it.Output
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteString(p.Text)
	}
	return sb.String()
}

// ToolOutputs lists the function_call_output items of the request: the
// answers to the model's tool calls so far.
func (r Request) ToolOutputs() []Item {
	var out []Item
	for _, it := range r.Input {
		if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" {
			out = append(out, it)
		}
	}
	return out
}

// decode fills the Responses API fields of r from its body.
func (r *Request) decode() error {
	var body struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Tools  []json.RawMessage `json:"tools"`
		Input  json.RawMessage   `json:"input"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		return err
	}
	r.Model, r.Stream, r.ToolSpecs = body.Model, body.Stream, body.Tools
	for _, tl := range body.Tools {
		var named struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal(tl, &named)
		if named.Name == "" {
			named.Name = named.Type
		}
		r.Tools = append(r.Tools, named.Name)
	}
	var s string
	if json.Unmarshal(body.Input, &s) == nil {
		b, _ := json.Marshal(s)
		r.Input = []Item{{Type: "message", Role: "user", Content: b}}
		return nil
	}
	if len(body.Input) == 0 || string(body.Input) == "null" {
		return nil
	}
	return json.Unmarshal(body.Input, &r.Input)
}
