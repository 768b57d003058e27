// Package openaitest runs the real Codex (through the ACP adapter
// codex-acp) in tests against a scripted stand-in for the OpenAI Responses
// API, the way net/http/httptest stands in for a web server.
//
//	m := openaitest.NewModel(t,
//		openaitest.ToolCall("exec_command", map[string]any{"cmd": "echo hi > hello.txt"}),
//		openaitest.Text("All done"),
//	)
//	cmd := exec.Command(openaitest.Binary(t), openaitest.Args(m)...)
//	cmd.Env = append(os.Environ(), openaitest.Env(m, codexHome)...)
//
// Codex 0.16.0's shell tool is exec_command, {"cmd": "..."} (its unified
// exec; also "workdir", "sandbox_permissions": "require_escalated" with a
// "justification", ...); apply_patch is a freeform (custom) tool, which
// ToolCall cannot script. Codex's stream parser (codex-rs codex-api
// sse/responses.rs) acts on response.created, response.output_item.added
// and .done (the items it keeps), response.output_text.delta (what
// codex-acp streams as agent_message_chunk), the reasoning deltas,
// response.failed and response.completed (its usage), and ignores the
// rest; a stream ending before response.completed is an error. The
// stand-in sends the API's other events around them too.
//
// The script advances only on the main conversation's requests: POST
// /v1/responses offering the model tools. Other requests (a request
// without tools, GET /v1/models) get a harmless default answer, unknown
// paths a 404 API error, so a test stays deterministic.
package openaitest

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
// request, reports InputTokens and OutputTokens as its usage.
const (
	InputTokens  = 10
	OutputTokens = 5
)

// Turn is one scripted answer of the model to the main conversation.
type Turn struct {
	text   string
	tool   string
	args   string // the function call's arguments: a JSON object, as text
	err    error  // from ToolCall's args
	status int    // an API error when non-zero
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

// ToolCall is a function_call output item calling the named tool with
// args, which is marshalled to JSON (a map or a struct with json tags).
func ToolCall(name string, args any) Turn {
	b, err := json.Marshal(args)
	if err == nil && (len(b) == 0 || b[0] != '{') {
		err = fmt.Errorf("args are %s, not a JSON object", b)
	}
	return Turn{tool: name, args: string(b), err: err}
}

// APIError answers with an HTTP error status and an OpenAI error body
// carrying message. As the last turn of a script it answers every later
// main request too, since clients retry.
func APIError(status int, message string) Turn {
	return Turn{status: status, text: message}
}

// Model is a scripted Responses API server.
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
	m := &Model{t: t, s: script.New[Turn, Request](t, "openaitest", turns, Turn.fault, Turn.repeats)}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// URL is the server's base URL, without the /v1 of the API's paths.
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
	isResponses := r.Method == http.MethodPost && r.URL.Path == "/v1/responses"
	if isResponses {
		if err := req.decode(); err != nil {
			m.record(req, "undecodable body: "+err.Error())
			writeError(w, http.StatusBadRequest, "openaitest: "+err.Error())
			return
		}
	}

	switch {
	case isResponses && len(req.Tools) > 0:
		// The main conversation: the agent offers the model its tools.
		m.mainTurn(w, r, req)
	case isResponses:
		// A side request (a title, a summary): answer briefly.
		id := m.s.NewID()
		m.record(req, "side request")
		answer(w, req, Text("ok"), id)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		m.record(req, "")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[],"models":[]}`)
	default:
		m.record(req, "unknown path")
		writeError(w, http.StatusNotFound, "openaitest: no such endpoint: "+r.Method+" "+r.URL.Path)
	}
}

// mainTurn answers a request of the main conversation with the script's
// next turn (its last, repeated, when that is an API error), after the
// turn's delay.
func (m *Model) mainTurn(w http.ResponseWriter, r *http.Request, req Request) {
	req.Main = true
	turn, i, ok := m.s.Next(r.Method + " " + r.URL.String())
	req.Turn = i
	id := m.s.NewID()
	if !ok {
		m.record(req, "past the end of the script")
		turn = Text("openaitest: the script has no more turns")
	} else {
		m.record(req, "")
	}
	if !script.Wait(r.Context(), turn.delay) {
		return
	}
	answer(w, req, turn, id)
}

// record keeps req and logs it in one line.
func (m *Model) record(req Request, note string) {
	m.s.Record(req)
	line := fmt.Sprintf("openaitest: %s %s", req.Method, req.Path)
	if req.Query != "" {
		line += "?" + req.Query
	}
	if req.Model != "" {
		line += fmt.Sprintf(" model=%s stream=%t tools=%d input=%d", req.Model, req.Stream, len(req.Tools), len(req.Input))
	}
	if req.Main {
		line += fmt.Sprintf(" turn=%d", req.Turn)
	}
	if note != "" {
		line += " (" + note + ")"
	}
	m.t.Log(line)
}
