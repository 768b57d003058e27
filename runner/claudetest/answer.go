// Answering as the Messages API does: a turn as a JSON message or as a
// stream of server-sent events, and an API error with its type.

package claudetest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

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
