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
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/internal/script"
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
	delay  time.Duration
}

// After is t answered d after its request arrives, as a model thinking
// that long would (the request's arrival, Request.At, is unchanged).
func (t Turn) After(d time.Duration) Turn {
	t.delay = d
	return t
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

// Model is a scripted Messages API server.
type Model struct {
	t   testing.TB
	srv *httptest.Server
	s   *script.Script[Turn, Request]
}

// fault says what is wrong with t; repeats whether, as the script's last
// turn, it answers every later request too (an API error: clients retry).
func (t Turn) fault() error {
	if t.err != nil {
		return fmt.Errorf("(%s): %w", t.tool, t.err)
	}
	return nil
}

func (t Turn) repeats() bool { return t.status != 0 }

// NewModel starts a stand-in that answers the main conversation with turns,
// in order. It is closed when the test ends.
func NewModel(t testing.TB, turns ...Turn) *Model {
	t.Helper()
	m := &Model{t: t, s: script.New[Turn, Request](t, "claudetest", turns, Turn.fault, Turn.repeats)}
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
	m.s.Set(i, tr, Turn.fault)
}

// Requests returns every request received so far, in order.
func (m *Model) Requests() []Request { return m.s.Requests() }

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
func (m *Model) Turns() int { return m.s.Answered() }

// messagesBody is the part of a Messages API request the stand-in reads.
type messagesBody struct {
	Model     string            `json:"model"`
	Stream    bool              `json:"stream"`
	MaxTokens int               `json:"max_tokens"`
	Messages  []Message         `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
}

func (m *Model) serve(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Turn: -1, At: at,
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
		m.mainTurn(w, r, req, mb)
	case isMessages:
		// A side request (quota check, title, summary): answer briefly.
		id := m.s.NewID()
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

// mainTurn answers a request of the main conversation with the script's
// next turn (its last, repeated, when that is an API error), after the
// turn's delay.
func (m *Model) mainTurn(w http.ResponseWriter, r *http.Request, req Request, mb messagesBody) {
	req.Main = true
	turn, i, ok := m.s.Next(r.Method + " " + r.URL.String())
	req.Turn = i
	id := m.s.NewID()
	if !ok {
		m.record(req, "past the end of the script")
		turn = Text("claudetest: the script has no more turns")
	} else {
		m.record(req, "")
	}
	if !script.Wait(r.Context(), turn.delay) {
		return
	}
	m.answer(w, mb, turn, id)
}

// record keeps req and logs it in one line.
func (m *Model) record(req Request, note string) {
	m.s.Record(req)
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
