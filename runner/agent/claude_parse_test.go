package agent

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/output"
)

// Lines as Claude Code 2.1 prints them (shortened where long).
const (
	lineInit        = `{"type":"system","subtype":"init","cwd":"/srv/ws/u1","session_id":"76b0fba1-db67-40da-9838-571efcc61e14","tools":["Task","Bash","Edit","Read","Write"],"mcp_servers":[],"model":"claude-opus-5-5","permissionMode":"bypassPermissions","apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.330"}`
	lineBash        = `{"type":"assistant","message":{"content":[{"id":"toolu_01","input":{"command":"echo hi > hello.txt","description":"write a file"},"name":"Bash","type":"tool_use"}],"id":"msg_01","model":"claude-opus-5-5","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message","usage":{"input_tokens":10,"output_tokens":1}},"parent_tool_use_id":null,"session_id":"76b0fba1-db67-40da-9838-571efcc61e14","uuid":"f0abdc40-ca52-4efa-9457-3fd0d7e59cce"}`
	lineToolResult  = `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"(Bash completed with no output)","is_error":false}]},"parent_tool_use_id":null,"session_id":"76b0fba1-db67-40da-9838-571efcc61e14","tool_use_result":{"stdout":"","stderr":"","interrupted":false}}`
	lineText        = `{"type":"assistant","message":{"content":[{"text":"All done: wrote hello.txt","type":"text"}],"id":"msg_02","role":"assistant","type":"message"},"parent_tool_use_id":null,"session_id":"76b0fba1-db67-40da-9838-571efcc61e14"}`
	lineTextAndTool = `{"type":"assistant","message":{"content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_02","name":"Read","input":{"file_path":"/srv/ws/u1/src/main.go","limit":40}},{"type":"tool_use","id":"toolu_03","name":"Edit","input":{"file_path":"/etc/hosts","old_string":"a","new_string":"b","replace_all":false}}]},"parent_tool_use_id":null,"session_id":"s1"}`
	lineSubagent    = `{"type":"assistant","message":{"content":[{"id":"toolu_04","input":{"pattern":"func main"},"name":"Grep","type":"tool_use"},{"text":"sub done","type":"text"}],"role":"assistant"},"parent_tool_use_id":"toolu_09","agent_id":"ad2088333d94bb961","session_id":"s1","subagent_type":"general-purpose"}`
	lineTaskStarted = `{"type":"system","subtype":"task_started","task_id":"ad2088333d94bb961","tool_use_id":"toolu_09","description":"look around","subagent_type":"general-purpose","session_id":"s1"}`
	lineResult      = `{"duration_api_ms":112,"stop_reason":"end_turn","session_id":"76b0fba1-db67-40da-9838-571efcc61e14","total_cost_usd":0.00048,"usage":{"input_tokens":20,"output_tokens":20},"permission_denials":[],"terminal_reason":"completed","is_error":false,"num_turns":2,"subtype":"success","api_error_status":null,"result":"All done: wrote hello.txt","type":"result","duration_ms":480}`
	lineResultError = `{"duration_api_ms":0,"stop_reason":"stop_sequence","session_id":"036985db-e50e-4ead-8f7b-2972f24a2458","total_cost_usd":0,"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":500,"api_error_type":"api_error","result":"API Error: 500 server exploded. This is a server-side issue, usually temporary — try again in a moment.","type":"result","duration_ms":119}`
	lineAPIError    = `{"type":"assistant","message":{"id":"1ed18af1","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","content":[{"type":"text","text":"API Error: 500 server exploded."}]},"parent_tool_use_id":null,"session_id":"036985db-e50e-4ead-8f7b-2972f24a2458","error":"server_error","is_api_error_message":true,"api_error_status":500}`
	lineMaxTurns    = `{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s2","total_cost_usd":1.25,"num_turns":3}`
)

func TestParseStreamLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    streamEvent
		wantErr bool
	}{
		{"init", lineInit, streamEvent{Type: "system", Subtype: "init", SessionID: "76b0fba1-db67-40da-9838-571efcc61e14"}, false},
		{"bash tool use", lineBash, streamEvent{Type: "assistant", SessionID: "76b0fba1-db67-40da-9838-571efcc61e14",
			Tools: []toolCall{{ID: "toolu_01", Name: "Bash", Input: map[string]string{"command": "echo hi > hello.txt", "description": "write a file"}}}}, false},
		{"tool result", lineToolResult, streamEvent{Type: "user", SessionID: "76b0fba1-db67-40da-9838-571efcc61e14", ToolResults: []string{"toolu_01"}}, false},
		{"text", lineText, streamEvent{Type: "assistant", SessionID: "76b0fba1-db67-40da-9838-571efcc61e14", Text: "All done: wrote hello.txt"}, false},
		{"text and tools", lineTextAndTool, streamEvent{Type: "assistant", SessionID: "s1", Text: "Let me look.", Tools: []toolCall{
			{ID: "toolu_02", Name: "Read", Input: map[string]string{"file_path": "/srv/ws/u1/src/main.go"}},
			{ID: "toolu_03", Name: "Edit", Input: map[string]string{"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"}},
		}}, false},
		{"subagent", lineSubagent, streamEvent{Type: "assistant", SessionID: "s1", Subagent: true, Text: "sub done",
			Tools: []toolCall{{ID: "toolu_04", Name: "Grep", Input: map[string]string{"pattern": "func main"}}}}, false},
		{"task started", lineTaskStarted, streamEvent{Type: "system", Subtype: "task_started", SessionID: "s1"}, false},
		{"result", lineResult, streamEvent{Type: "result", Subtype: "success", SessionID: "76b0fba1-db67-40da-9838-571efcc61e14",
			Result: "All done: wrote hello.txt", Total: Usage{USD: 0.00048}}, false},
		{"result error", lineResultError, streamEvent{Type: "result", Subtype: "success", SessionID: "036985db-e50e-4ead-8f7b-2972f24a2458",
			Result: "API Error: 500 server exploded. This is a server-side issue, usually temporary — try again in a moment.", IsError: true}, false},
		{"api error message", lineAPIError, streamEvent{Type: "assistant", SessionID: "036985db-e50e-4ead-8f7b-2972f24a2458", Text: "API Error: 500 server exploded.", APIError: "server_error"}, false},
		{"not logged in", `{"type":"assistant","message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"Not logged in · Please run /login"}]},"session_id":"s3","error":"authentication_failed","is_api_error_message":true}`,
			streamEvent{Type: "assistant", SessionID: "s3", Text: "Not logged in · Please run /login", APIError: apiErrorAuth}, false},
		{"max turns", lineMaxTurns, streamEvent{Type: "result", Subtype: "error_max_turns", SessionID: "s2", IsError: true, Total: Usage{USD: 1.25}}, false},
		{"string content", `{"type":"assistant","message":{"content":"plain"}}`, streamEvent{Type: "assistant", Text: "plain"}, false},
		{"wrong field types", `{"type":"result","result":42,"is_error":"yes","total_cost_usd":"1","session_id":7}`, streamEvent{Type: "result"}, false},
		{"tool without input", `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash"}]}}`,
			streamEvent{Type: "assistant", Tools: []toolCall{{Name: "Bash", Input: map[string]string{}}}}, false},
		{"empty", ``, streamEvent{}, true},
		{"not json", `Error: something went wrong`, streamEvent{}, true},
		{"array", `[1,2,3]`, streamEvent{}, true},
		{"null", `null`, streamEvent{}, true},
		{"no type", `{"session_id":"s"}`, streamEvent{}, true},
		{"truncated", lineBash[:len(lineBash)/2], streamEvent{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStreamLine([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStreamLine error = %v; want error %t", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseStreamLine(%s)\n got %+v;\nwant %+v", tt.name, got, tt.want)
			}
		})
	}
}

func TestStreamProgressLine(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name  string
		input map[string]string
		want  string
	}{
		{"Bash", map[string]string{"command": "echo hi > hello.txt"}, "Running `echo hi > hello.txt`"},
		{"Bash", map[string]string{"command": "\n  go test ./...\n  go vet ./...\n"}, "Running `go test ./...`"},
		{"Bash", map[string]string{"command": "echo " + long}, "Running `echo " + strings.Repeat("x", 74) + "…`"},
		{"Bash", map[string]string{"command": "echo " + strings.Repeat("é", 75)}, "Running `echo " + strings.Repeat("é", 75) + "`"},
		{"Bash", map[string]string{}, "Running a command"},
		{"Edit", map[string]string{"file_path": "/srv/ws/u1/src/main.go"}, "Editing src/main.go"},
		{"Write", map[string]string{"file_path": "notes.md"}, "Editing notes.md"},
		{"MultiEdit", map[string]string{"file_path": "/etc/hosts"}, "Editing /etc/hosts"},
		{"Edit", map[string]string{"file_path": "/srv/ws/u1-other/x"}, "Editing /srv/ws/u1-other/x"},
		{"NotebookEdit", map[string]string{"notebook_path": "/srv/ws/u1/a.ipynb"}, "Editing a.ipynb"},
		{"Write", map[string]string{}, "Editing a file"},
		{"Read", map[string]string{"file_path": "/srv/ws/u1/go.mod"}, "Reading go.mod"},
		{"Read", map[string]string{"file_path": "/srv/ws/u1"}, "Reading ."},
		{"Grep", map[string]string{"pattern": "func main"}, "Searching for func main"},
		{"Glob", map[string]string{"pattern": "**/*.go"}, "Searching for **/*.go"},
		{"WebFetch", map[string]string{"url": "https://go.dev/doc", "prompt": "summarise"}, "Fetching https://go.dev/doc"},
		{"WebSearch", map[string]string{"query": "go 1.26 release notes"}, "Searching the web for go 1.26 release notes"},
		{"TodoWrite", map[string]string{}, "Planning"},
		{"Task", map[string]string{"description": "look around", "prompt": "list files"}, "Delegating: look around"},
		{"Agent", map[string]string{"prompt": "list files"}, "Delegating: list files"},
		{"mcp__github__create_issue", map[string]string{"title": "x"}, "Using mcp__github__create_issue"},
		{"", map[string]string{}, "Using a tool"},
	}
	for _, tt := range tests {
		got := progressLine(toolCall{Name: tt.name, Input: tt.input}, "/srv/ws/u1")
		if got != tt.want {
			t.Errorf("progressLine(%s %v) = %q; want %q", tt.name, tt.input, got, tt.want)
		}
	}
}

// feed writes lines to a claudeStream through a output.LineWriter in awkward
// pieces, as a pipe would, and returns the result and progress lines.
func feed(t *testing.T, outputCap int, lines ...string) (Result, bool, []string) {
	t.Helper()
	var progress []string
	st := &claudeStream{dir: "/srv/ws/u1", cap: outputCap, progress: func(s string) { progress = append(progress, s) }}
	w := &output.LineWriter{Max: 4096, Line: func(line []byte) { st.handle(t.Context(), line) }}
	all := strings.Join(lines, "\n")
	for len(all) > 0 {
		n := min(7, len(all))
		if _, err := w.Write([]byte(all[:n])); err != nil {
			t.Fatalf("Write: %v", err)
		}
		all = all[n:]
	}
	w.Flush()
	return st.result(), st.done, progress
}

func TestStreamResult(t *testing.T) {
	huge := `{"type":"user","message":{"content":"` + strings.Repeat("z", 5000) + `"}}`
	tests := []struct {
		name         string
		cap          int
		lines        []string
		want         Result
		wantDone     bool
		wantProgress []string
	}{
		{
			name:         "full run",
			cap:          1000,
			lines:        []string{lineInit, lineBash, lineToolResult, lineText, lineResult},
			want:         Result{Text: "All done: wrote hello.txt", CostUSD: 0.00048, SessionID: "76b0fba1-db67-40da-9838-571efcc61e14", SessionTotal: &Usage{USD: 0.00048}},
			wantDone:     true,
			wantProgress: []string{"Running `echo hi > hello.txt`"},
		},
		{
			name:         "no result line keeps the text so far",
			cap:          1000,
			lines:        []string{lineInit, lineTextAndTool, lineSubagent, lineText},
			want:         Result{Text: "Let me look.\n\nAll done: wrote hello.txt", SessionID: "76b0fba1-db67-40da-9838-571efcc61e14"},
			wantProgress: []string{"Reading src/main.go", "Editing /etc/hosts", "Searching for func main"},
		},
		{
			name:     "the last result counts",
			cap:      1000,
			lines:    []string{lineResultError, "", "junk", lineResult},
			want:     Result{Text: "All done: wrote hello.txt", CostUSD: 0.00048, SessionID: "76b0fba1-db67-40da-9838-571efcc61e14", SessionTotal: &Usage{USD: 0.00048}},
			wantDone: true,
		},
		{
			name:     "result cut at the cap",
			cap:      8,
			lines:    []string{lineText, lineResult},
			want:     Result{Text: "All done", CostUSD: 0.00048, SessionID: "76b0fba1-db67-40da-9838-571efcc61e14", SessionTotal: &Usage{USD: 0.00048}, Truncated: true},
			wantDone: true,
		},
		{
			name:         "text cut at the cap",
			cap:          9,
			lines:        []string{lineTextAndTool, lineText},
			want:         Result{Text: "Let me lo", SessionID: "s1", Truncated: true},
			wantProgress: []string{"Reading src/main.go", "Editing /etc/hosts"},
		},
		{
			name:     "an over-long line is skipped",
			cap:      1000,
			lines:    []string{lineBash, huge, lineResult},
			want:     Result{Text: "All done: wrote hello.txt", CostUSD: 0.00048, SessionID: "76b0fba1-db67-40da-9838-571efcc61e14", SessionTotal: &Usage{USD: 0.00048}},
			wantDone: true, wantProgress: []string{"Running `echo hi > hello.txt`"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, done, progress := feed(t, tt.cap, tt.lines...)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("result = %+v; want %+v", got, tt.want)
			}
			if done != tt.wantDone {
				t.Errorf("done = %t; want %t", done, tt.wantDone)
			}
			if !reflect.DeepEqual(progress, tt.wantProgress) {
				t.Errorf("progress = %q; want %q", progress, tt.wantProgress)
			}
		})
	}
}

func FuzzParseStreamLine(f *testing.F) {
	for _, s := range []string{
		lineInit, lineBash, lineToolResult, lineText, lineTextAndTool, lineSubagent,
		lineTaskStarted, lineResult, lineResultError, lineAPIError, lineMaxTurns,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"a\nb"}}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Edit","input":{"file_path":"/srv/ws/u1/../x"}}]}}`,
		``, `null`, `[]`, `{"type":1}`, "{\"type\":\"assistant\",\"message\":{\"content\":\"\xff\"}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := parseStreamLine(line)
		if err != nil {
			return
		}
		if ev.Type == "" {
			t.Errorf("parseStreamLine(%q) gave no type and no error", line)
		}
		for _, tc := range ev.Tools {
			p := progressLine(tc, "/srv/ws/u1")
			if !utf8.ValidString(p) {
				t.Errorf("progressLine(%+v) = %q; want valid UTF-8", tc, p)
			}
			if strings.ContainsAny(p, "\r\n") {
				t.Errorf("progressLine(%+v) = %q; want one line", tc, p)
			}
			if n := utf8.RuneCountInString(p); n > progressRunes+25 {
				t.Errorf("progressLine(%+v) has %d runes; want at most %d", tc, n, progressRunes+25)
			}
		}
	})
}

func TestMarkerLines(t *testing.T) {
	tests := []struct {
		in, reply string
		approval  bool
		shots     []Handover
	}{
		{"plain", "plain", false, nil},
		{"Done.\n::approval::", "Done.", true, nil},
		{"Here:\nSCREENSHOT_CAPTURED: shots/a.png\n  SCREENSHOT_CAPTURED:b.jpeg\nbye", "Here:\nbye", false, []Handover{{Path: "shots/a.png"}, {Path: "b.jpeg"}}},
		{"say ::approval:: inline", "say ::approval:: inline", false, nil},
		{"SCREENSHOT_CAPTURED:", "", false, nil},
	}
	for _, tt := range tests {
		reply, approval, shots := markerLines(tt.in)
		if reply != tt.reply || approval != tt.approval || !reflect.DeepEqual(shots, tt.shots) {
			t.Errorf("markerLines(%q) = %q, %t, %+v; want %q, %t, %+v", tt.in, reply, approval, shots, tt.reply, tt.approval, tt.shots)
		}
	}
}

// A result's running totals are the session's, and a resumed session's
// start with its earlier runs'; a run counts what each of its results
// says the model did since the process's previous one, once. From a CLI
// that does not say, a resumed session's first result counts from the
// session's total at its last result, when it was kept.
func TestStreamCountsTheRunOnce(t *testing.T) {
	// A resumed session whose earlier runs used 20 tokens in, 10 out,
	// $0.00028; this run makes three requests, in two turns (a second
	// result: a message added to the run, background work).
	const (
		first  = `{"type":"result","subtype":"success","result":"a","total_cost_usd":0.00056,"modelUsage":{"m":{"inputTokens":40,"outputTokens":20,"costUSD":0.00056}},"model_usage_since_last_result":{"m":{"inputTokens":20,"outputTokens":10,"costUSD":0.00028}}}`
		second = `{"type":"result","subtype":"success","result":"b","total_cost_usd":0.0007,"modelUsage":{"m":{"inputTokens":45,"outputTokens":25,"cacheReadInputTokens":5,"costUSD":0.0007}},"model_usage_since_last_result":{"m":{"inputTokens":5,"outputTokens":5,"cacheReadInputTokens":5,"costUSD":0.00014}}}`
		// From a CLI that does not say what it counted since its last result.
		firstOld  = `{"type":"result","subtype":"success","result":"a","total_cost_usd":0.00056,"modelUsage":{"m":{"inputTokens":40,"outputTokens":20}}}`
		secondOld = `{"type":"result","subtype":"success","result":"b","total_cost_usd":0.0007,"modelUsage":{"m":{"inputTokens":45,"outputTokens":25,"cacheReadInputTokens":5}}}`
	)
	kept := &Usage{USD: 0.00028, In: 20, Out: 10} // the session's total at its last result
	for _, c := range []struct {
		name    string
		resumed bool
		kept    *Usage
		lines   []string
		want    Usage
	}{
		{"resumed", true, nil, []string{first, second}, Usage{USD: 0.00042, In: 30, Out: 15}},
		{"nothing counted", true, nil, []string{strings.Replace(first, `{"m":{"inputTokens":20,"outputTokens":10,"costUSD":0.00028}}`, `{}`, 1)}, Usage{}},
		{"resumed, older CLI", true, nil, []string{firstOld, secondOld}, Usage{USD: 0.00014, In: 10, Out: 5}},
		{"resumed, older CLI, total kept", true, kept, []string{firstOld, secondOld}, Usage{USD: 0.00042, In: 30, Out: 15}},
		{"new session, older CLI", false, nil, []string{firstOld, secondOld}, Usage{USD: 0.0007, In: 50, Out: 25}},
		{"zeroed error result", false, nil, []string{firstOld, lineResultError}, Usage{USD: 0.00056, In: 40, Out: 20}},
	} {
		session := ""
		if c.resumed {
			session = "s0"
		}
		st := newStream(&Run{OutputCap: 1000, SessionTotal: c.kept}, nil, session)
		for _, line := range c.lines {
			st.handle(t.Context(), []byte(line))
		}
		res := st.result()
		got := Usage{USD: res.CostUSD, In: res.InputTokens, Out: res.OutputTokens}
		if d := got.minus(c.want); d.In != 0 || d.Out != 0 || math.Abs(d.USD) > 1e-12 {
			t.Errorf("%s: counted %+v; want %+v", c.name, got, c.want)
		}
		if res.SessionTotal == nil || *res.SessionTotal != st.last {
			t.Errorf("%s: session total %v; want the last result's, %+v", c.name, res.SessionTotal, st.last)
		}
	}
}

// Where tool calls may wait for permission, a call's progress line waits
// for it: sent when the call ran without asking, dropped when it was
// denied.
func TestStreamHoldsProgressUntilAllowed(t *testing.T) {
	var progress []string
	st := &claudeStream{cap: 1000, dir: "/srv/ws/u1", hold: true, held: map[string]string{},
		run: &Run{Job: contract.Job{Mode: contract.ModeAsk}}, progress: func(s string) { progress = append(progress, s) }}
	st.handle(t.Context(), []byte(lineTextAndTool)) // Read toolu_02, Edit toolu_03
	if len(progress) != 0 {
		t.Fatalf("progress %q before any call was allowed; want none", progress)
	}
	st.handle(t.Context(), []byte(`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Edit","input":{"file_path":"/etc/hosts"},"tool_use_id":"toolu_03"}}`))
	st.handle(t.Context(), []byte(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_02","type":"tool_result","content":"x"},{"tool_use_id":"toolu_03","type":"tool_result","content":"denied","is_error":true}]}}`))
	if want := []string{"Reading src/main.go"}; !reflect.DeepEqual(progress, want) {
		t.Errorf("progress %q; want %q (the read ran without asking; the edit was denied: nobody to ask)", progress, want)
	}
}
