// Answering as the Gemini API does: a turn as a GenerateContentResponse,
// whole or as server-sent events, and an API error with its status.

package geminitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// sideAnswer is the answer to a request outside the script: when the CLI
// asked for JSON (a router's or a checker's verdict), the least value of
// its schema (the lowest score, empty strings and lists, false), else a word.
func sideAnswer(req Request) Turn {
	if req.ResponseMIMEType != "application/json" {
		return Text("ok")
	}
	var schema map[string]any
	_ = json.Unmarshal(req.ResponseSchema, &schema)
	b, _ := json.Marshal(zero(schema))
	return Text(string(b))
}

// zero is the least value of a JSON schema (OpenAPI's upper-case types too):
// the minimum of a number, an enum's first value, an object's properties.
func zero(schema map[string]any) any {
	if enum, ok := schema["enum"].([]any); ok && len(enum) > 0 {
		return enum[0]
	}
	typ, _ := schema["type"].(string)
	switch strings.ToLower(typ) {
	case "string":
		return ""
	case "integer", "number":
		if v, ok := schema["minimum"].(float64); ok {
			return v
		}
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	}
	out := map[string]any{}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		ps, _ := p.(map[string]any)
		out[name] = zero(ps)
	}
	return out
}

// answer writes turn as the Gemini API would: SSE chunks for
// :streamGenerateContent, one JSON response otherwise.
func (m *Model) answer(w http.ResponseWriter, req Request, turn Turn) {
	if turn.status != 0 {
		writeError(w, turn.status, turn.text)
		return
	}
	id := m.s.NewID()
	model := req.Model
	if model == "" {
		model = "gemini-geminitest"
	}
	chunk := func(parts []any, last bool) map[string]any {
		cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		out := map[string]any{"candidates": []any{cand}, "modelVersion": model,
			"responseId": fmt.Sprintf("geminitest%04d", id)}
		if last {
			cand["finishReason"] = "STOP"
			out["usageMetadata"] = map[string]any{"promptTokenCount": PromptTokens,
				"candidatesTokenCount": CandidatesTokens, "totalTokenCount": PromptTokens + CandidatesTokens}
		}
		return out
	}
	var pieces [][]any
	if turn.tool != "" {
		pieces = [][]any{{map[string]any{"functionCall": map[string]any{"name": turn.tool, "args": turn.args}}}}
	} else {
		for _, s := range chunks(turn.text, 3) {
			pieces = append(pieces, []any{map[string]any{"text": s}})
		}
	}
	if !req.Stream {
		parts := pieces[0]
		if turn.tool == "" {
			parts = []any{map[string]any{"text": turn.text}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(chunk(parts, true))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for i, p := range pieces {
		b, _ := json.Marshal(chunk(p, i == len(pieces)-1))
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// chunks cuts s into at most n pieces on rune boundaries, as a stream
// would; the empty string is one empty piece.
func chunks(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return []string{""}
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

// errorStatus is the google.rpc status name of an HTTP status.
func errorStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	default:
		return "INTERNAL"
	}
}

func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"code": status, "message": message, "status": errorStatus(status)},
	})
}
