package notiontest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// apiError is an error answer: Notion's HTTP status, code and message.
type apiError struct {
	status  int
	code    string
	message string
}

func invalidRequest(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "validation_error", fmt.Sprintf(format, args...)}
}

// notFound is Notion's answer for an id it does not know, or one not
// shared with the integration.
func notFound(kind, id string) *apiError {
	return &apiError{http.StatusNotFound, "object_not_found",
		fmt.Sprintf("Could not find %s with ID: %s. Make sure the relevant pages and databases are shared with your integration.", kind, id)}
}

// unsupported fails the test for a request Notion takes but the fake does
// not implement, so that the gap is not taken for a client mistake.
func (s *Server) unsupported(what string) *apiError {
	s.t.Errorf("notiontest: %s is valid for Notion but not implemented by this fake", what)
	return invalidRequest("notiontest does not implement %s.", what)
}

// codes are Notion's error codes, by HTTP status, for Fail.
var codes = map[int]string{
	400: "validation_error", 401: "unauthorized", 403: "restricted_resource",
	404: "object_not_found", 409: "conflict_error", 429: "rate_limited",
	500: "internal_server_error", 502: "bad_gateway", 503: "service_unavailable",
	504: "gateway_timeout", 529: "service_overload",
}

// handler answers one endpoint: ids are the path's variable segments,
// body the request's (nil for a GET). s.mu is held.
type handler func(s *Server, r *http.Request, ids []string, body []byte) (any, *apiError)

// route is an endpoint: its method and path, "{}" standing for an id.
type route struct {
	method, path string
	h            handler
}

var routes = []route{
	{http.MethodGet, "/v1/databases/{}", (*Server).getDatabase},
	{http.MethodGet, "/v1/data_sources/{}", (*Server).getDataSource},
	{http.MethodPost, "/v1/data_sources/{}/query", (*Server).queryDataSource},
	{http.MethodGet, "/v1/pages/{}", (*Server).getPage},
	{http.MethodPatch, "/v1/pages/{}", (*Server).updatePage},
	{http.MethodGet, "/v1/blocks/{}/children", (*Server).blockChildren},
	{http.MethodPost, "/v1/comments", (*Server).createComment},
	{http.MethodPost, "/v1/file_uploads", (*Server).createUpload},
	{http.MethodGet, "/v1/file_uploads/{}", (*Server).getUpload},
	{http.MethodPost, "/v1/file_uploads/{}/send", (*Server).sendUpload},
}

// match finds the route of method and path, and the path's ids.
func match(method, path string) (handler, []string) {
	segs := strings.Split(path, "/")
	for _, rt := range routes {
		want := strings.Split(rt.path, "/")
		if rt.method != method || len(want) != len(segs) {
			continue
		}
		var ids []string
		ok := true
		for i, w := range want {
			switch {
			case w == "{}" && segs[i] != "":
				ids = append(ids, segs[i])
			case w != segs[i]:
				ok = false
			}
		}
		if ok {
			return rt.h, ids
		}
	}
	return nil, nil
}

// maxBody bounds a request body: a send of MaxUpload and its multipart
// framing; JSON bodies are far smaller.
const maxBody = maxUpload + 1<<20

// serve answers one request: injected failures first (they stand for
// Notion's own state), then the token, the version, the route, and the
// endpoint.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, requestRecord{r.Method, r.URL.Path})
	var inj *injection
	if len(s.injected) > 0 {
		inj = &s.injected[0]
		s.injected = s.injected[1:]
	}
	s.mu.Unlock()
	if inj != nil {
		s.answerInjected(w, *inj)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		writeError(w, &apiError{http.StatusUnauthorized, "unauthorized", "API token is invalid."})
		return
	}
	switch v := r.Header.Get("Notion-Version"); {
	case v == "":
		writeError(w, &apiError{http.StatusBadRequest, "missing_version",
			"Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`."})
		return
	case v != Version:
		writeError(w, invalidRequest("Notion-Version header failed validation: notiontest speaks only %q, instead was %q.", Version, v))
		return
	}
	h, ids := match(r.Method, r.URL.Path)
	if h == nil {
		writeError(w, &apiError{http.StatusBadRequest, "invalid_request_url", "Invalid request URL."})
		return
	}
	var body []byte
	if r.Method != http.MethodGet {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			writeError(w, invalidRequest("body failed validation: request body over %d bytes.", maxBody))
			return
		}
		body = b
	}
	s.mu.Lock()
	out, apiErr := h(s, r, ids, body)
	s.mu.Unlock()
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// answerInjected answers with a failure asked for by RateLimit or Fail.
func (s *Server) answerInjected(w http.ResponseWriter, inj injection) {
	e := &apiError{status: inj.status, code: codes[inj.status], message: http.StatusText(inj.status)}
	if e.code == "" {
		e.code = strings.ReplaceAll(strings.ToLower(http.StatusText(inj.status)), " ", "_")
	}
	if inj.status == http.StatusTooManyRequests {
		e.message = "You have been rate limited. Please try again in a few minutes."
		w.Header().Set("Retry-After", strconv.Itoa(inj.retryAfter))
	}
	writeError(w, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]any{
		"object": "error", "status": e.status, "code": e.code, "message": e.message,
		"request_id": newID(),
	})
}

// jsonBody parses a JSON request body into its fields, which must be among
// allowed: it must come with Content-Type: application/json (the fake's
// strict reading: Notion's endpoints other than send "use JSON
// parameters"), be JSON, and be an object. An empty body is an empty
// object.
func jsonBody(r *http.Request, body []byte, allowed ...string) (fields, *apiError) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, invalidRequest("body failed validation: Content-Type should be `application/json`, instead was `%s`.", r.Header.Get("Content-Type"))
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return fields{}, nil
	}
	if !json.Valid(body) {
		return nil, &apiError{http.StatusBadRequest, "invalid_json", "Error parsing JSON body."}
	}
	return object(body, "body", allowed...)
}

// pathID is the id in a path segment as Notion takes it (a UUID, with or
// without dashes), with dashes; name is the path parameter's.
func pathID(seg, name string) (string, *apiError) {
	id, ok := canonicalID(seg)
	if !ok {
		return "", invalidRequest("path failed validation: path.%s should be a valid uuid, instead was `%q`.", name, seg)
	}
	return id, nil
}

// canonicalID is id (32 hex digits, with dashes where Notion puts them or
// none) in the form Notion gives ids: lowercase, with dashes.
func canonicalID(id string) (string, bool) {
	h := strings.ToLower(strings.ReplaceAll(id, "-", ""))
	if len(h) != 32 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", false
	}
	dashed := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	if strings.Contains(id, "-") && strings.ToLower(id) != dashed {
		return "", false
	}
	return dashed, true
}
