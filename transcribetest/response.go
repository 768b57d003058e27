package transcribetest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// duration is the length, in seconds, the fake gives every audio in
// verbose_json, srt and vtt.
const duration = 1.0

// languages names the languages verbose_json reports, as OpenAI does (the
// English name, in lowercase); a code not here is reported as sent.
var languages = map[string]string{
	"de": "german", "en": "english", "es": "spanish", "fr": "french", "it": "italian",
	"ja": "japanese", "nl": "dutch", "pl": "polish", "pt": "portuguese", "ru": "russian",
	"uk": "ukrainian", "zh": "chinese",
}

func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.attempts++
	a.mu.Unlock()
	req, audio, e := read(r)
	if e != nil {
		a.t.Logf("transcribetest: %s %s refused: %d %s", r.Method, r.URL.Path, e.Status, e.Message)
		e.write(w)
		return
	}
	a.mu.Lock()
	transcribe := a.transcribe
	fail := 0
	if len(a.failNext) > 0 {
		fail, a.failNext = a.failNext[0], a.failNext[1:]
	}
	a.mu.Unlock()
	if fail != 0 {
		a.t.Logf("transcribetest: failing as asked: %d", fail)
		failure(fail, req.Model).write(w)
		return
	}
	text, err := transcribe(audio, req.Filename, req.Language)
	if err != nil {
		a.t.Logf("transcribetest: audio refused: %v", err)
		badRequest(err.Error(), "file", "invalid_value").write(w)
		return
	}
	a.mu.Lock()
	a.requests = append(a.requests, req)
	a.mu.Unlock()
	a.t.Logf("transcribetest: %s %d bytes model=%s language=%q format=%q → %d chars", req.Filename, req.Size, req.Model, req.Language, req.ResponseFormat, len(text))
	respond(w, req, text)
}

// respond writes the transcript in the response_format asked for.
func respond(w http.ResponseWriter, req Request, text string) {
	plain := func(body string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprint(w, body)
	}
	switch req.ResponseFormat {
	case "", "json":
		writeJSON(w, http.StatusOK, map[string]string{"text": text})
	case "text":
		plain(text + "\n")
	case "srt":
		plain(fmt.Sprintf("1\n00:00:00,000 --> 00:00:01,000\n%s\n\n", text))
	case "vtt":
		plain(fmt.Sprintf("WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n%s\n\n", text))
	case "verbose_json":
		lang := "english"
		if req.Language != "" {
			lang = req.Language
			if name, ok := languages[req.Language]; ok {
				lang = name
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"task": "transcribe", "language": lang, "duration": duration, "text": text, "segments": []any{},
		})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is an error answer of OpenAI's API: its status and body.
type apiError struct {
	Status  int
	Message string
	Type    string
	Param   string // "" is written as null
	Code    string // "" is written as null
	Header  http.Header
}

func (e *apiError) write(w http.ResponseWriter) {
	for k, vs := range e.Header {
		w.Header()[k] = vs
	}
	null := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	writeJSON(w, e.Status, map[string]any{"error": map[string]any{
		"message": e.Message, "type": e.Type, "param": null(e.Param), "code": null(e.Code),
	}})
}

func badRequest(msg, param, code string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: msg, Type: "invalid_request_error", Param: param, Code: code}
}

func missing(param string) *apiError {
	return badRequest(fmt.Sprintf("Missing required parameter: '%s'.", param), param, "missing_required_parameter")
}

// invalidURL is OpenAI's answer to a method or path it does not serve.
func invalidURL(r *http.Request) *apiError {
	return &apiError{Status: http.StatusNotFound, Message: fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), Type: "invalid_request_error"}
}

// failure is OpenAI's answer for a status FailNext asks for.
func failure(status int, model string) *apiError {
	switch {
	case status == http.StatusTooManyRequests:
		return &apiError{
			Status:  status,
			Message: fmt.Sprintf("Rate limit reached for %s in organization org-transcribetest on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.", model),
			Type:    "requests", Code: "rate_limit_exceeded",
			Header: http.Header{
				"X-Ratelimit-Limit-Requests":     {"3"},
				"X-Ratelimit-Remaining-Requests": {"0"},
				"X-Ratelimit-Reset-Requests":     {"20s"},
			},
		}
	case status == http.StatusInternalServerError:
		return &apiError{Status: status, Message: "The server had an error while processing your request. Sorry about that!", Type: "server_error"}
	case status == http.StatusServiceUnavailable:
		return &apiError{Status: status, Message: "The engine is currently overloaded, please try again later.", Type: "server_error"}
	case status >= 500:
		return &apiError{Status: status, Message: http.StatusText(status), Type: "server_error"}
	}
	return &apiError{Status: status, Message: http.StatusText(status), Type: "invalid_request_error"}
}
