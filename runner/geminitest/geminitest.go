// Package geminitest runs the real Gemini CLI in tests against a scripted
// stand-in for the Gemini API (generativelanguage.googleapis.com), the way
// net/http/httptest stands in for a web server.
//
//	m := geminitest.NewModel(t,
//		geminitest.ToolCall("run_shell_command", map[string]string{"command": "echo hi > hello.txt"}),
//		geminitest.Text("All done"),
//	)
//	geminitest.WriteSettings(t, home) // no usage statistics, no update checks
//	cmd := exec.Command(geminitest.Binary(t), "--acp")
//	cmd.Env = append([]string{"HOME=" + home, ...}, geminitest.Env(m)...) // GOOGLE_GEMINI_BASE_URL=m.URL() and friends
//
// The script advances only on the main conversation's requests: POST
// /v1beta/models/{model}:streamGenerateContent (or :generateContent)
// offering the model function declarations. Everything else the CLI asks
// (a model router's classification, a next-speaker or loop check, titles:
// requests without tools; :countTokens) gets a harmless default answer,
// unknown paths a 404 API error, so a test stays deterministic.
package geminitest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/internal/script"
)

// Every answer of the stand-in, to the main conversation or to a side
// request, reports PromptTokens and CandidatesTokens in its usageMetadata.
const (
	PromptTokens     = 10
	CandidatesTokens = 5
)

// Turn is one scripted answer of the model to the main conversation.
type Turn struct {
	text   string
	tool   string
	args   json.RawMessage
	err    error // from ToolCall's args
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

// ToolCall is a functionCall part calling the named tool
// ("run_shell_command", "write_file", ...) with args, which are marshalled
// to JSON (a map or a struct with json tags).
func ToolCall(name string, args any) Turn {
	b, err := json.Marshal(args)
	if err == nil && (len(b) == 0 || b[0] != '{') {
		err = fmt.Errorf("args are %s, not a JSON object", b)
	}
	return Turn{tool: name, args: b, err: err}
}

// APIError answers with an HTTP error status and a Google API error body
// carrying message. As the last turn of a script it answers every later main
// request too, since clients retry.
func APIError(status int, message string) Turn {
	return Turn{status: status, text: message}
}

// Model is a scripted Gemini API server.
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
	m := &Model{t: t, s: script.New[Turn, Request](t, "geminitest", turns, Turn.fault, Turn.repeats)}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// URL is the base URL for GOOGLE_GEMINI_BASE_URL.
func (m *Model) URL() string { return m.srv.URL }

// SetTurn replaces turn i of the script before it is answered: for args
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
	model, method, isModel := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	isModel = isModel && r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1beta/models/")
	req.Model, req.Stream = model, method == "streamGenerateContent"
	generate := isModel && (method == "generateContent" || method == "streamGenerateContent")
	if generate {
		if err := req.decode(); err != nil {
			m.record(req, "undecodable body: "+err.Error())
			writeError(w, http.StatusBadRequest, "geminitest: "+err.Error())
			return
		}
	}
	switch {
	case generate && len(req.Tools) > 0:
		// The main conversation: the agent offers the model its tools.
		m.mainTurn(w, r, req)
	case generate:
		m.record(req, "side request")
		m.answer(w, req, sideAnswer(req))
	case isModel && method == "countTokens":
		m.record(req, "")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"totalTokens":%d}`, len(body)/4+1)
	default:
		m.record(req, "unknown path")
		writeError(w, http.StatusNotFound, "geminitest: no such endpoint: "+r.Method+" "+r.URL.Path)
	}
}

// mainTurn answers a request of the main conversation with the script's
// next turn (its last, repeated, when that is an API error), after the
// turn's delay.
func (m *Model) mainTurn(w http.ResponseWriter, r *http.Request, req Request) {
	req.Main = true
	turn, i, ok := m.s.Next(r.Method + " " + r.URL.String())
	req.Turn = i
	if !ok {
		m.record(req, "past the end of the script")
		turn = Text("geminitest: the script has no more turns")
	} else {
		m.record(req, "")
	}
	if !script.Wait(r.Context(), turn.delay) {
		return
	}
	m.answer(w, req, turn)
}

// record keeps req and logs it in one line.
func (m *Model) record(req Request, note string) {
	m.s.Record(req)
	line := fmt.Sprintf("geminitest: %s %s", req.Method, req.Path)
	if req.Query != "" {
		line += "?" + req.Query
	}
	if req.Contents != nil {
		line += fmt.Sprintf(" tools=%d contents=%d", len(req.Tools), len(req.Contents))
	}
	if req.Main {
		line += fmt.Sprintf(" turn=%d", req.Turn)
	}
	if note != "" {
		line += " (" + note + ")"
	}
	m.t.Log(line)
}
