// What the stand-in received: a Request, with the messages and content
// blocks of a Messages API body decoded, and the tool results it carries.

package claudetest

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
	Query  string // raw query, e.g. "beta=true"
	Header http.Header
	Body   []byte // as received
	// At is when the request arrived: its headers read, before its body
	// (for a client's latency to the model, as benchmarks measure it).
	At time.Time
	// Main is true for the main conversation's requests, the ones the
	// script answers; Turn is then the index of the turn that answered.
	Main bool
	Turn int

	// Decoded from a Messages API body; zero for other requests.
	Model     string
	Stream    bool
	MaxTokens int
	Tools     []string // names of the tools offered
	Messages  []Message
}

// Message is one message of a Messages API request.
type Message struct {
	Role    string
	Content []Block
}

// UnmarshalJSON accepts content as a string or as a list of blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	m.Content = nil
	var s string
	if json.Unmarshal(raw.Content, &s) == nil {
		m.Content = []Block{{Type: "text", Text: s}}
		return nil
	}
	if len(raw.Content) == 0 || string(raw.Content) == "null" {
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// Block is one content block: text, tool_use, tool_result, ...
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // tool_result: a string or blocks
	IsError   bool            `json:"is_error,omitempty"`
}

// ResultText is the text of a tool_result block's content.
func (b Block) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var blocks []Block
	if json.Unmarshal(b.Content, &blocks) != nil {
		return ""
	}
	var sb strings.Builder
	for _, c := range blocks {
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// ToolResults lists the tool_result blocks of the request's last message:
// the answers to the model's previous turn.
func (r Request) ToolResults() []Block {
	if len(r.Messages) == 0 {
		return nil
	}
	var out []Block
	for _, b := range r.Messages[len(r.Messages)-1].Content {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}
