package transcribetest

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// responseFormats are the values of response_format the reference lists;
// json is the default.
var responseFormats = []string{"json", "text", "srt", "verbose_json", "vtt"}

// fields are the form fields the fake knows; any other is refused, so that a
// misspelt field does not pass unnoticed.
var fields = []string{"file", "model", "language", "prompt", "response_format", "temperature"}

// read checks a request against the reference and returns what it asks for
// and its audio, or the error OpenAI would answer with.
func read(r *http.Request) (Request, []byte, *apiError) {
	if r.Method != http.MethodPost || r.URL.Path != Path {
		return Request{}, nil, invalidURL(r)
	}
	key, e := bearer(r.Header.Get("Authorization"))
	if e != nil {
		return Request{}, nil, e
	}
	body, e := readBody(r.Body)
	if e != nil {
		return Request{}, nil, e
	}
	ct := r.Header.Get("Content-Type")
	media, params, err := mime.ParseMediaType(ct)
	if err != nil || media != "multipart/form-data" || params["boundary"] == "" {
		return Request{}, nil, badRequest(fmt.Sprintf("Invalid Content-Type header (%s), expected multipart/form-data with a boundary.", ct), "", "")
	}
	form, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(2 * MaxBytes)
	if err != nil {
		return Request{}, nil, badRequest("Could not parse multipart form: "+err.Error(), "", "")
	}
	defer func() { _ = form.RemoveAll() }()
	req := Request{Key: key, At: time.Now()}
	audio, e := readFile(form, &req)
	if e != nil {
		return Request{}, nil, e
	}
	if e := readFields(form, &req); e != nil {
		return Request{}, nil, e
	}
	return req, audio, nil
}

// bearer returns the key of an Authorization header, if it is Key.
func bearer(h string) (string, *apiError) {
	key, ok := strings.CutPrefix(h, "Bearer ")
	switch {
	case h == "":
		return "", &apiError{Status: http.StatusUnauthorized, Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", Type: "invalid_request_error"}
	case !ok || key != Key:
		return "", &apiError{Status: http.StatusUnauthorized, Message: fmt.Sprintf("Incorrect API key provided: %s.", redact(key)), Type: "invalid_request_error", Code: "invalid_api_key"}
	}
	return key, nil
}

// redact shows the ends of a key, as OpenAI does.
func redact(key string) string {
	if len(key) <= 8 {
		return strings.Repeat("*", len(key))
	}
	return key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
}

// readBody reads a request body of at most MaxBytes.
func readBody(r io.Reader) ([]byte, *apiError) {
	body, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, badRequest("Could not read the request body: "+err.Error(), "", "")
	}
	if len(body) > MaxBytes {
		rest, _ := io.Copy(io.Discard, r)
		return nil, &apiError{Status: http.StatusRequestEntityTooLarge, Message: fmt.Sprintf("Maximum content size limit (%d) exceeded (%d bytes read)", MaxBytes, int64(len(body))+rest), Type: "server_error"}
	}
	return body, nil
}

// readFile takes the file part: one upload, with a filename of a format
// the reference lists, not empty.
func readFile(form *multipart.Form, req *Request) ([]byte, *apiError) {
	files := form.File["file"]
	switch {
	case len(form.Value["file"]) > 0:
		return nil, badRequest("'file' must be a file upload with a filename, not a plain form field.", "file", "invalid_value")
	case len(files) == 0:
		return nil, missing("file")
	case len(files) > 1:
		return nil, badRequest("Only one 'file' can be sent.", "file", "invalid_value")
	}
	fh := files[0]
	req.Filename, req.ContentType = fh.Filename, fh.Header.Get("Content-Type")
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(fh.Filename), "."))
	if !slices.Contains(Formats, ext) {
		return nil, badRequest(fmt.Sprintf("Invalid file format. Supported formats: %s", strings.Join(Formats, ", ")), "file", "invalid_value")
	}
	f, err := fh.Open()
	if err != nil {
		return nil, badRequest("Could not read 'file': "+err.Error(), "file", "")
	}
	defer func() { _ = f.Close() }()
	audio, err := io.ReadAll(f)
	if err != nil {
		return nil, badRequest("Could not read 'file': "+err.Error(), "file", "")
	}
	if len(audio) == 0 {
		return nil, badRequest("Audio file is too short. Minimum audio length is 0.1 seconds.", "file", "audio_too_short")
	}
	req.Size = len(audio)
	return audio, nil
}

// readFields takes the text fields: model (required), language, prompt,
// response_format and temperature, each sent at most once.
func readFields(form *multipart.Form, req *Request) *apiError {
	for name, vs := range form.Value {
		if !slices.Contains(fields, name) {
			return badRequest(fmt.Sprintf("Unrecognized request argument supplied: %s", name), name, "unknown_parameter")
		}
		if len(vs) > 1 {
			return badRequest(fmt.Sprintf("'%s' was sent %d times.", name, len(vs)), name, "invalid_value")
		}
	}
	for name := range form.File {
		if name != "file" {
			return badRequest(fmt.Sprintf("Unrecognized request argument supplied: %s", name), name, "unknown_parameter")
		}
	}
	get := func(name string) string {
		if vs := form.Value[name]; len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	req.Model, req.Language, req.Prompt = get("model"), get("language"), get("prompt")
	req.ResponseFormat, req.Temperature = get("response_format"), get("temperature")
	if req.Model == "" {
		return missing("model")
	}
	if _, sent := form.Value["language"]; sent && !iso6391(req.Language) {
		return badRequest(fmt.Sprintf("Invalid language '%s'. Language parameter must be specified in ISO-639-1 format.", req.Language), "language", "invalid_language_format")
	}
	if _, sent := form.Value["response_format"]; sent && !slices.Contains(responseFormats, req.ResponseFormat) {
		return badRequest(fmt.Sprintf("Invalid value for 'response_format': '%s'. Supported values are: %s.", req.ResponseFormat, strings.Join(responseFormats, ", ")), "response_format", "invalid_value")
	}
	if _, sent := form.Value["temperature"]; sent {
		t, err := strconv.ParseFloat(req.Temperature, 64)
		if err != nil || t < 0 || t > 1 {
			return badRequest(fmt.Sprintf("Invalid value for 'temperature': '%s'. It must be a number between 0 and 1.", req.Temperature), "temperature", "invalid_value")
		}
	}
	return nil
}

// iso6391 reports whether s has the shape of an ISO-639-1 code: two
// lowercase letters.
func iso6391(s string) bool {
	return len(s) == 2 && 'a' <= s[0] && s[0] <= 'z' && 'a' <= s[1] && s[1] <= 'z'
}
