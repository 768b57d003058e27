// Package claudetest runs the real Claude Code CLI in tests against a
// scripted stand-in for the Anthropic Messages API, the way net/http/httptest
// stands in for a web server.
//
//	m := claudetest.NewModel(t,
//		claudetest.ToolUse("Bash", map[string]string{"command": "echo hi > hello.txt"}),
//		claudetest.Text("All done"),
//	)
//	claudetest.Setenv(t, m) // ANTHROPIC_BASE_URL=m.URL() and friends
//	cmd := exec.Command(claudetest.Binary(t), "-p", ...)
//
// The script advances only on the main conversation's requests: POST
// /v1/messages offering the model tools. Claude Code 2.1.330 run with Env
// sends nothing else, but CLIs may add side requests (quota checks, titles,
// summaries: /v1/messages without tools), count_tokens, or a connectivity
// check (HEAD /api/hello, sent when nonessential traffic is on); these get
// a harmless default answer, unknown paths a 404 API error, so a test stays
// deterministic. Subagents (the Task tool) ask with tools too: their turns
// are part of the script, in the order the CLI asks.
package claudetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/textslash/textslash/natstest"
)

// Every answer of the stand-in, to the main conversation or to a side
// request, uses InputTokens and OutputTokens: a run's usage is its
// requests times these.
const (
	InputTokens  = 10
	OutputTokens = 5
)

// Turn is one scripted answer of the model to the main conversation.
type Turn struct {
	text   string
	tool   string
	input  json.RawMessage
	err    error // from ToolUse's input
	status int   // an API error when non-zero
}

// Text is a final answer: the model says s and ends its turn.
func Text(s string) Turn { return Turn{text: s} }

// ToolUse is a call of the named tool ("Bash", "Write", ...) with input,
// which is marshalled to JSON (a map or a struct with json tags).
func ToolUse(name string, input any) Turn {
	b, err := json.Marshal(input)
	if err == nil && (len(b) == 0 || b[0] != '{') {
		err = fmt.Errorf("input is %s, not a JSON object", b)
	}
	return Turn{tool: name, input: b, err: err}
}

// APIError answers with an HTTP error status and an Anthropic error body
// carrying message. As the last turn of a script it answers every later main
// request too, since clients retry.
func APIError(status int, message string) Turn {
	return Turn{status: status, text: message}
}

// Request is one request the stand-in received.
type Request struct {
	Method string
	Path   string // URL path, without the query
	Query  string // raw query, e.g. "beta=true"
	Header http.Header
	Body   []byte // as received
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

// Model is a scripted Messages API server.
type Model struct {
	t     testing.TB
	srv   *httptest.Server
	turns []Turn

	mu   sync.Mutex
	next int // the next turn to answer
	reqs []Request
	ids  int
}

// NewModel starts a stand-in that answers the main conversation with turns,
// in order. It is closed when the test ends.
func NewModel(t testing.TB, turns ...Turn) *Model {
	t.Helper()
	for i, tr := range turns {
		if tr.err != nil {
			t.Fatalf("claudetest: turn %d (%s): %v", i, tr.tool, tr.err)
		}
	}
	m := &Model{t: t, turns: turns}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// URL is the base URL for ANTHROPIC_BASE_URL.
func (m *Model) URL() string { return m.srv.URL }

// SetTurn replaces turn i of the script before it is answered: for inputs
// known only once the test runs (a workspace's absolute path).
func (m *Model) SetTurn(i int, tr Turn) {
	m.t.Helper()
	if tr.err != nil {
		m.t.Fatalf("claudetest: turn %d (%s): %v", i, tr.tool, tr.err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if i < m.next || i >= len(m.turns) {
		m.t.Fatalf("claudetest: SetTurn(%d): answered already or past the script's %d turns", i, len(m.turns))
	}
	m.turns[i] = tr
}

// Requests returns every request received so far, in order.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.reqs...)
}

// MainRequests returns the main conversation's requests so far, in order.
func (m *Model) MainRequests() []Request {
	var out []Request
	for _, r := range m.Requests() {
		if r.Main {
			out = append(out, r)
		}
	}
	return out
}

// Turns is how many scripted turns have been answered.
func (m *Model) Turns() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

// Env is the environment the CLI needs to talk to m, and only to m, and to
// start quickly: no updates, telemetry, error reports or other side traffic.
func Env(m *Model) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + m.URL(),
		"ANTHROPIC_API_KEY=sk-ant-claudetest",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		// Fail at once on an API error instead of retrying with backoff.
		"CLAUDE_CODE_MAX_RETRIES=0",
	}
}

// Setenv sets Env(m) for the test's duration with t.Setenv.
func Setenv(t testing.TB, m *Model) {
	t.Helper()
	for _, kv := range Env(m) {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// messagesBody is the part of a Messages API request the stand-in reads.
type messagesBody struct {
	Model     string            `json:"model"`
	Stream    bool              `json:"stream"`
	MaxTokens int               `json:"max_tokens"`
	Messages  []Message         `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Turn: -1,
	}
	var mb messagesBody
	isMessages := r.Method == http.MethodPost && r.URL.Path == "/v1/messages"
	if isMessages {
		if err := json.Unmarshal(body, &mb); err != nil {
			m.record(req, "undecodable body: "+err.Error())
			writeError(w, http.StatusBadRequest, "invalid_request_error", "claudetest: "+err.Error())
			return
		}
		req.Model, req.Stream, req.MaxTokens, req.Messages = mb.Model, mb.Stream, mb.MaxTokens, mb.Messages
		for _, tl := range mb.Tools {
			var named struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(tl, &named)
			req.Tools = append(req.Tools, named.Name)
		}
	}

	switch {
	case isMessages && len(req.Tools) > 0:
		// The main conversation: the agent offers the model its tools.
		m.mu.Lock()
		req.Main = true
		turn, ok := Turn{}, false
		switch {
		case m.next < len(m.turns):
			turn, ok = m.turns[m.next], true
			req.Turn = m.next
			m.next++
		case len(m.turns) > 0 && m.turns[len(m.turns)-1].status != 0:
			turn, ok = m.turns[len(m.turns)-1], true
			req.Turn = len(m.turns) - 1
		}
		id := m.newID()
		m.mu.Unlock()
		if !ok {
			m.record(req, "past the end of the script")
			m.t.Errorf("claudetest: main request %s %s past the end of the %d-turn script", r.Method, r.URL, len(m.turns))
			turn = Text("claudetest: the script has no more turns")
		} else {
			m.record(req, "")
		}
		m.answer(w, mb, turn, id)
	case isMessages:
		// A side request (quota check, title, summary): answer briefly.
		m.mu.Lock()
		id := m.newID()
		m.mu.Unlock()
		m.record(req, "side request")
		m.answer(w, mb, Text("ok"), id)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		m.record(req, "")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, len(body)/4+1)
	case r.URL.Path == "/api/hello":
		// The CLI's connectivity check (sent unless nonessential traffic is off).
		m.record(req, "")
		w.WriteHeader(http.StatusOK)
	default:
		m.record(req, "unknown path")
		writeError(w, http.StatusNotFound, "not_found_error", "claudetest: no such endpoint: "+r.Method+" "+r.URL.Path)
	}
}

// record keeps req and logs it in one line.
func (m *Model) record(req Request, note string) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	line := fmt.Sprintf("claudetest: %s %s", req.Method, req.Path)
	if req.Query != "" {
		line += "?" + req.Query
	}
	if req.Model != "" {
		line += fmt.Sprintf(" model=%s stream=%t max_tokens=%d tools=%d messages=%d", req.Model, req.Stream, req.MaxTokens, len(req.Tools), len(req.Messages))
	}
	if req.Main {
		line += fmt.Sprintf(" turn=%d", req.Turn)
	}
	if note != "" {
		line += " (" + note + ")"
	}
	m.t.Log(line)
}

// newID numbers ids; m.mu must be held.
func (m *Model) newID() int {
	m.ids++
	return m.ids
}

// answer writes turn as the Messages API would: SSE when the request asked
// for a stream, a JSON message otherwise.
func (m *Model) answer(w http.ResponseWriter, mb messagesBody, turn Turn, id int) {
	if turn.status != 0 {
		writeError(w, turn.status, errorType(turn.status), turn.text)
		return
	}
	model := mb.Model
	if model == "" {
		model = "claude-claudetest"
	}
	block := map[string]any{"type": "text", "text": turn.text}
	stop := "end_turn"
	if turn.tool != "" {
		block = map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_claudetest%04d", id),
			"name": turn.tool, "input": turn.input,
		}
		stop = "tool_use"
	}
	usage := map[string]any{
		"input_tokens": InputTokens, "output_tokens": OutputTokens,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
	}
	w.Header().Set("request-id", fmt.Sprintf("req_claudetest%04d", id))
	msgID := fmt.Sprintf("msg_claudetest%04d", id)
	if !mb.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": InputTokens, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	if turn.tool != "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": turn.tool, "input": map[string]any{}}})
		event("ping", map[string]any{"type": "ping"})
		for _, part := range chunks(string(turn.input), 3) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
	} else {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		event("ping", map[string]any{"type": "ping"})
		for _, part := range chunks(turn.text, 3) {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": part}})
		}
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": OutputTokens}})
	event("message_stop", map[string]any{"type": "message_stop"})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// chunks cuts s into at most n pieces on rune boundaries, as a stream would.
func chunks(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return nil
	}
	size := (len(r) + n - 1) / n
	var out []string
	for len(r) > 0 {
		k := min(size, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func writeError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": message},
	})
}

// Binary is the path of the claude CLI: $TEXTSLASH_TEST_CLAUDE_BIN, else
// testdata/npm/node_modules/.bin/claude under the repository root (the
// directory holding go.work). The test is skipped when it is missing, or
// fails when $CI is set.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("TEXTSLASH_TEST_CLAUDE_BIN")
	if bin == "" {
		root, err := natstest.RepoRoot()
		if err != nil {
			natstest.Missing(t, "claude CLI: %v", err)
		}
		bin = filepath.Join(root, "testdata", "npm", "node_modules", ".bin", "claude")
	}
	fi, err := os.Stat(bin)
	if err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
		err = errors.New("not an executable file")
	}
	if err != nil {
		natstest.Missing(t, "claude CLI %s: %v", bin, err)
	}
	return bin
}

// AgentUser is the OS user to run the CLI as when the test runs as root
// (Claude Code refuses --dangerously-skip-permissions as root):
// $TEXTSLASH_TEST_AGENT_USER, else "textslash-agent". It is "" when the
// test does not run as root. The test is skipped when the user does not
// exist, or fails when $CI is set.
func AgentUser(t testing.TB) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return ""
	}
	name := os.Getenv("TEXTSLASH_TEST_AGENT_USER")
	if name == "" {
		name = "textslash-agent"
	}
	if _, err := user.Lookup(name); err != nil {
		natstest.Missing(t, "agent user: %v", err)
	}
	return name
}
