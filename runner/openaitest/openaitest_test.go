package openaitest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// post sends a streamed main request and returns its events' types and the
// item of its response.output_item.done.
func post(t *testing.T, m *Model) (types []string, item map[string]any) {
	t.Helper()
	body := `{"model":"gpt-x","stream":true,"input":"hi","tools":[{"type":"function","name":"exec_command"}]}`
	resp, err := http.Post(m.URL()+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type string         `json:"type"`
			Item map[string]any `json:"item"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		types = append(types, ev.Type)
		if ev.Type == "response.output_item.done" {
			item = ev.Item
		}
	}
	return types, item
}

// A tool call streams as a function_call item, text as a message, each
// opened by response.created and closed by response.completed.
func TestStream(t *testing.T) {
	m := NewModel(t, ToolCall("exec_command", map[string]string{"cmd": "true"}), Text("All done"))
	types, item := post(t, m)
	want := "response.created response.in_progress response.output_item.added " +
		"response.function_call_arguments.delta response.function_call_arguments.delta " +
		"response.function_call_arguments.delta response.function_call_arguments.done " +
		"response.output_item.done response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	if item["type"] != "function_call" || item["name"] != "exec_command" || item["arguments"] != `{"cmd":"true"}` {
		t.Errorf("function_call item %v", item)
	}
	types, item = post(t, m)
	if types[len(types)-1] != "response.completed" || !strings.Contains(strings.Join(types, " "), "response.output_text.delta") {
		t.Errorf("text events %v", types)
	}
	b, _ := json.Marshal(item["content"])
	if item["type"] != "message" || !strings.Contains(string(b), `"text":"All done"`) {
		t.Errorf("message item %v", item)
	}
	reqs := m.MainRequests()
	if len(reqs) != 2 || reqs[0].Turn != 0 || reqs[1].Turn != 1 || reqs[0].Input[0].Text() != "hi" {
		t.Errorf("main requests %+v", reqs)
	}
	if m.Turns() != 2 {
		t.Errorf("Turns %d; want 2", m.Turns())
	}
}
