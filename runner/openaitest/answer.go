// Answering as the Responses API does: a turn as a stream of server-sent
// events or as a JSON response object, and an API error.

package openaitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// answer writes turn as the Responses API would: SSE when the request
// asked for a stream, a JSON response object otherwise.
func answer(w http.ResponseWriter, req Request, turn Turn, id int) {
	if turn.status != 0 {
		writeError(w, turn.status, turn.text)
		return
	}
	model := req.Model
	if model == "" {
		model = "gpt-openaitest"
	}
	respID := fmt.Sprintf("resp_openaitest%04d", id)
	item := outputItem(turn, id, "completed")
	w.Header().Set("x-request-id", fmt.Sprintf("req_openaitest%04d", id))
	response := func(status string, output []any) map[string]any {
		r := map[string]any{
			"id": respID, "object": "response", "created_at": time.Now().Unix(),
			"status": status, "model": model, "output": output,
		}
		if status == "completed" {
			r["usage"] = map[string]any{
				"input_tokens": InputTokens, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens": OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
				"total_tokens": InputTokens + OutputTokens,
			}
		}
		return r
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(response("completed", []any{item}))
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	seq := 0
	event := func(name string, data map[string]any) {
		data["type"], data["sequence_number"] = name, seq
		seq++
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	event("response.created", map[string]any{"response": response("in_progress", []any{})})
	event("response.in_progress", map[string]any{"response": response("in_progress", []any{})})
	event("response.output_item.added", map[string]any{"output_index": 0, "item": outputItem(turn, id, "in_progress")})
	itemID := item["id"]
	if turn.tool != "" {
		for _, part := range chunks(turn.args, 3) {
			event("response.function_call_arguments.delta", map[string]any{
				"item_id": itemID, "output_index": 0, "delta": part})
		}
		event("response.function_call_arguments.done", map[string]any{
			"item_id": itemID, "output_index": 0, "arguments": turn.args})
	} else {
		at := map[string]any{"item_id": itemID, "output_index": 0, "content_index": 0}
		with := func(k string, v any) map[string]any {
			m := map[string]any{k: v}
			for k, v := range at {
				m[k] = v
			}
			return m
		}
		event("response.content_part.added", with("part", textPart("")))
		for _, part := range chunks(turn.text, 3) {
			event("response.output_text.delta", with("delta", part))
		}
		event("response.output_text.done", with("text", turn.text))
		event("response.content_part.done", with("part", textPart(turn.text)))
	}
	event("response.output_item.done", map[string]any{"output_index": 0, "item": item})
	event("response.completed", map[string]any{"response": response("completed", []any{item})})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// outputItem is turn's one output item, a function_call or an assistant
// message, with the given status: as added (in_progress, empty) or done.
func outputItem(turn Turn, id int, status string) map[string]any {
	done := status == "completed"
	if turn.tool != "" {
		args := ""
		if done {
			args = turn.args
		}
		return map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_openaitest%04d", id),
			"call_id": fmt.Sprintf("call_openaitest%04d", id), "name": turn.tool,
			"arguments": args, "status": status,
		}
	}
	content := []any{}
	if done {
		content = []any{textPart(turn.text)}
	}
	return map[string]any{
		"type": "message", "id": fmt.Sprintf("msg_openaitest%04d", id),
		"role": "assistant", "status": status, "content": content,
	}
}

func textPart(s string) map[string]any {
	return map[string]any{"type": "output_text", "text": s, "annotations": []any{}}
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

// errorType is the OpenAI error type of an HTTP status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	default:
		return "server_error"
	}
}

func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": message, "type": errorType(status), "param": nil, "code": nil},
	})
}
