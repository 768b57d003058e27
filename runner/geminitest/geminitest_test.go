package geminitest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// post sends body to path on m and returns the status and the data lines
// of the answer (the one JSON body when it is not a stream).
func post(t *testing.T, m *Model, path, body string) (int, []string) {
	t.Helper()
	resp, err := http.Post(m.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, d)
		} else if line != "" {
			out = append(out, line)
		}
	}
	return resp.StatusCode, out
}

const mainBody = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`

// The script answers requests offering tools, as SSE chunks whose parts
// make up the turn; the last chunk ends it with STOP and usage.
func TestStreamedTurns(t *testing.T) {
	m := NewModel(t, ToolCall("write_file", map[string]string{"file_path": "a.txt", "content": "x"}), Text("All done"))
	path := "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"
	_, call := post(t, m, path, mainBody)
	_, text := post(t, m, path, mainBody)
	if len(call) != 1 || !strings.Contains(call[0], `"functionCall":{"args":{"content":"x","file_path":"a.txt"},"name":"write_file"}`) {
		t.Errorf("tool call chunks %q", call)
	}
	var got strings.Builder
	for i, c := range text {
		var r struct {
			Candidates []struct {
				Content      Content `json:"content"`
				FinishReason string  `json:"finishReason"`
			} `json:"candidates"`
			Usage *struct {
				Prompt int `json:"promptTokenCount"`
			} `json:"usageMetadata"`
		}
		if err := json.Unmarshal([]byte(c), &r); err != nil || len(r.Candidates) != 1 {
			t.Fatalf("chunk %q: %v", c, err)
		}
		got.WriteString(r.Candidates[0].Content.Parts[0].Text)
		if last := i == len(text)-1; last != (r.Candidates[0].FinishReason == "STOP") || last != (r.Usage != nil) {
			t.Errorf("chunk %d of %d: finishReason %q, usage %v", i, len(text), r.Candidates[0].FinishReason, r.Usage)
		}
	}
	if got.String() != "All done" {
		t.Errorf("streamed text %q; want \"All done\"", got.String())
	}
	if m.Turns() != 2 || len(m.MainRequests()) != 2 || m.MainRequests()[1].Contents[0].Parts[0].Text != "hi" {
		t.Errorf("turns %d, main requests %+v", m.Turns(), m.MainRequests())
	}
}

// A side request asking for JSON gets its schema's least value, outside
// the script; an API error answers every later main request.
func TestSideRequestsAndErrors(t *testing.T) {
	m := NewModel(t, APIError(429, "slow down"))
	side := `{"contents":[{"role":"user","parts":[{"text":"route"}]}],"generationConfig":{"responseMimeType":"application/json",` +
		`"responseJsonSchema":{"type":"object","properties":{"complexity_score":{"type":"integer","minimum":1},"reasoning":{"type":"string"}}}}}`
	_, out := post(t, m, "/v1beta/models/gemini-lite:generateContent", side)
	if len(out) != 1 || !strings.Contains(out[0], `"text":"{\"complexity_score\":1,\"reasoning\":\"\"}"`) {
		t.Errorf("side answer %q", out)
	}
	for range 2 {
		if status, out := post(t, m, "/v1beta/models/gemini-x:generateContent", mainBody); status != 429 || !strings.Contains(strings.Join(out, ""), "RESOURCE_EXHAUSTED") {
			t.Errorf("main answer %d %q; want 429 RESOURCE_EXHAUSTED", status, out)
		}
	}
	if status, _ := post(t, m, "/v1beta/models/gemini-x:countTokens", mainBody); status != 200 {
		t.Errorf("countTokens: %d", status)
	}
	if status, _ := post(t, m, "/v1/other", "{}"); status != 404 {
		t.Errorf("unknown path: %d; want 404", status)
	}
	if n := len(m.MainRequests()); n != 2 {
		t.Errorf("%d main requests; want 2", n)
	}
}
