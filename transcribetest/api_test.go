package transcribetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
)

// oggAudio stands for an OGG/Opus voice note: its magic, then some bytes.
var oggAudio = append([]byte("OggS"), bytes.Repeat([]byte{1}, 1000)...)

// call is a request to the fake, built from its parts.
type call struct {
	method, path string
	auth         string   // the Authorization header; "-" for none
	contentType  string   // overrides the multipart one
	fields       []string // name, value pairs
	file         *part
}

type part struct {
	field, filename, contentType string
	data                         []byte
	plain                        bool // a form field, without a filename
}

// good is a request that matches the reference.
func good() call {
	return call{
		fields: []string{"model", "whisper-1"},
		file:   &part{field: "file", filename: "voice.ogg", contentType: "audio/ogg", data: oggAudio},
	}
}

func (c call) with(fields ...string) call {
	c.fields = append(append([]string(nil), c.fields...), fields...)
	return c
}

func (c call) do(t *testing.T, a *API) (*http.Response, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for i := 0; i+1 < len(c.fields); i += 2 {
		if err := mw.WriteField(c.fields[i], c.fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if p := c.file; p != nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="`+p.field+`"; filename="`+p.filename+`"`)
		if p.plain {
			h.Set("Content-Disposition", `form-data; name="`+p.field+`"`)
		}
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(p.data)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	method, path := c.method, c.path
	if method == "" {
		method = http.MethodPost
	}
	if path == "" {
		path = Path
	}
	req, err := http.NewRequest(method, a.URL()+path, &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	switch c.auth {
	case "":
		req.Header.Set("Authorization", "Bearer "+Key)
	case "-":
	default:
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, got
}

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func TestAcceptedPerResponseFormat(t *testing.T) {
	tests := []struct {
		format      string
		contentType string
		want        string
	}{
		{"", "application/json", `{"text":"Bonjour tout le monde."}` + "\n"},
		{"json", "application/json", `{"text":"Bonjour tout le monde."}` + "\n"},
		{"text", "text/plain; charset=utf-8", "Bonjour tout le monde.\n"},
		{"srt", "text/plain; charset=utf-8", "1\n00:00:00,000 --> 00:00:01,000\nBonjour tout le monde.\n\n"},
		{"vtt", "text/plain; charset=utf-8", "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nBonjour tout le monde.\n\n"},
		{"verbose_json", "application/json", `{"duration":1,"language":"french","segments":[],"task":"transcribe","text":"Bonjour tout le monde."}` + "\n"},
	}
	for _, tt := range tests {
		t.Run("format="+tt.format, func(t *testing.T) {
			a := New(t)
			a.Say("Bonjour tout le monde.")
			c := good().with("language", "fr")
			if tt.format != "" {
				c = c.with("response_format", tt.format)
			}
			resp, body := c.do(t, a)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s; want 200", resp.StatusCode, body)
			}
			if got := resp.Header.Get("Content-Type"); got != tt.contentType {
				t.Errorf("Content-Type %q; want %q", got, tt.contentType)
			}
			if string(body) != tt.want {
				t.Errorf("body %q; want %q", body, tt.want)
			}
			reqs := a.Requests()
			if len(reqs) != 1 || reqs[0].ResponseFormat != tt.format {
				t.Errorf("requests %+v; want one with response_format %q", reqs, tt.format)
			}
		})
	}
}

func TestRequestRecorded(t *testing.T) {
	a := New(t)
	resp, body := good().with("language", "en", "prompt", "textslash, NATS", "temperature", "0.2").do(t, a)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s; want 200", resp.StatusCode, body)
	}
	if string(body) != `{"text":"`+DefaultTranscript+`"}`+"\n" {
		t.Errorf("body %s; want the default transcript", body)
	}
	reqs := a.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests; want 1", len(reqs))
	}
	got := reqs[0]
	want := Request{Filename: "voice.ogg", ContentType: "audio/ogg", Model: "whisper-1", Language: "en", Prompt: "textslash, NATS", Temperature: "0.2", Size: len(oggAudio), Key: Key}
	if got.At.IsZero() {
		t.Errorf("At is zero")
	}
	got.At = want.At // zero: checked above
	if got != want {
		t.Errorf("got %+v; want %+v", got, want)
	}
}

func TestTranscribeSeesTheAudio(t *testing.T) {
	a := New(t)
	var gotAudio []byte
	var gotName, gotLang string
	a.Transcribe(func(audio []byte, filename, language string) (string, error) {
		gotAudio, gotName, gotLang = audio, filename, language
		if !bytes.HasPrefix(audio, []byte("OggS")) {
			return "", errors.New("Audio file might be corrupted or unsupported")
		}
		return "ogg it is", nil
	})
	resp, body := good().with("language", "de").do(t, a)
	if resp.StatusCode != http.StatusOK || string(body) != `{"text":"ogg it is"}`+"\n" {
		t.Fatalf("got %d %s; want 200 with the transcript", resp.StatusCode, body)
	}
	if !bytes.Equal(gotAudio, oggAudio) || gotName != "voice.ogg" || gotLang != "de" {
		t.Errorf("Transcribe got %d bytes, %q, %q; want the %d bytes of voice.ogg, de", len(gotAudio), gotName, gotLang, len(oggAudio))
	}

	c := good()
	c.file.data = []byte("RIFF not an ogg")
	resp, body = c.do(t, a)
	var e errorBody
	_ = json.Unmarshal(body, &e)
	if resp.StatusCode != http.StatusBadRequest || e.Error.Message != "Audio file might be corrupted or unsupported" {
		t.Errorf("got %d %s; want 400 with Transcribe's error", resp.StatusCode, body)
	}
	if n := len(a.Requests()); n != 1 {
		t.Errorf("%d requests recorded; want 1 (the refused one not)", n)
	}
}

func TestRefused(t *testing.T) {
	file := func(filename string, data []byte) call {
		c := good()
		c.file = &part{field: "file", filename: filename, contentType: "audio/ogg", data: data}
		return c
	}
	noModel := good()
	noModel.fields = nil
	emptyModel := good()
	emptyModel.fields = []string{"model", ""}
	noFile := good()
	noFile.file = nil
	plainFile := good()
	plainFile.file = &part{field: "file", data: oggAudio, plain: true}
	get := good()
	get.method = http.MethodGet
	put := good()
	put.method = http.MethodPut
	wrongPath := good()
	wrongPath.path = "/v1/audio/transcription"
	noV1 := good()
	noV1.path = "/audio/transcriptions"
	noAuth := good()
	noAuth.auth = "-"
	badKey := good()
	badKey.auth = "Bearer sk-wrong-key-0000"
	basic := good()
	basic.auth = "Basic " + Key
	asJSON := good()
	asJSON.contentType = "application/json"
	urlencoded := good()
	urlencoded.contentType = "application/x-www-form-urlencoded"
	noBoundary := good()
	noBoundary.contentType = "multipart/form-data"
	twoFiles := good()
	twoFiles.fields = append(twoFiles.fields, "file", "x")
	tooBig := file("voice.wav", make([]byte, MaxBytes))

	tests := []struct {
		name   string
		call   call
		status int
		typ    string
		param  string // "" for null
		code   string // "" for null
	}{
		{"GET", get, 404, "invalid_request_error", "", ""},
		{"PUT", put, 404, "invalid_request_error", "", ""},
		{"wrong path", wrongPath, 404, "invalid_request_error", "", ""},
		{"path without /v1", noV1, 404, "invalid_request_error", "", ""},
		{"no Authorization", noAuth, 401, "invalid_request_error", "", ""},
		{"wrong key", badKey, 401, "invalid_request_error", "", "invalid_api_key"},
		{"Basic auth", basic, 401, "invalid_request_error", "", "invalid_api_key"},
		{"JSON body", asJSON, 400, "invalid_request_error", "", ""},
		{"urlencoded body", urlencoded, 400, "invalid_request_error", "", ""},
		{"multipart without boundary", noBoundary, 400, "invalid_request_error", "", ""},
		{"no file", noFile, 400, "invalid_request_error", "file", "missing_required_parameter"},
		{"file without filename", plainFile, 400, "invalid_request_error", "file", "invalid_value"},
		{"file as a field too", twoFiles, 400, "invalid_request_error", "file", "invalid_value"},
		{"no model", noModel, 400, "invalid_request_error", "model", "missing_required_parameter"},
		{"empty model", emptyModel, 400, "invalid_request_error", "model", "missing_required_parameter"},
		{"model sent twice", good().with("model", "whisper-1"), 400, "invalid_request_error", "model", "invalid_value"},
		{"txt file", file("voice.txt", oggAudio), 400, "invalid_request_error", "file", "invalid_value"},
		{"opus file", file("voice.opus", oggAudio), 400, "invalid_request_error", "file", "invalid_value"},
		{"no extension", file("voice", oggAudio), 400, "invalid_request_error", "file", "invalid_value"},
		{"empty file", file("voice.ogg", nil), 400, "invalid_request_error", "file", "audio_too_short"},
		{"unknown response_format", good().with("response_format", "xml"), 400, "invalid_request_error", "response_format", "invalid_value"},
		{"empty response_format", good().with("response_format", ""), 400, "invalid_request_error", "response_format", "invalid_value"},
		{"language not ISO-639-1", good().with("language", "english"), 400, "invalid_request_error", "language", "invalid_language_format"},
		{"temperature above 1", good().with("temperature", "1.5"), 400, "invalid_request_error", "temperature", "invalid_value"},
		{"temperature not a number", good().with("temperature", "warm"), 400, "invalid_request_error", "temperature", "invalid_value"},
		{"unknown field", good().with("langauge", "en"), 400, "invalid_request_error", "langauge", "unknown_parameter"},
		{"over 25 MB", tooBig, 413, "server_error", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := New(t)
			resp, body := tt.call.do(t, a)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d: %s; want %d", resp.StatusCode, body, tt.status)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q; want application/json", got)
			}
			var e errorBody
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			str := func(p *string) string {
				if p == nil {
					return ""
				}
				return *p
			}
			if e.Error.Message == "" || e.Error.Type != tt.typ || str(e.Error.Param) != tt.param || str(e.Error.Code) != tt.code {
				t.Errorf("error %s; want type %q, param %q, code %q and a message", body, tt.typ, tt.param, tt.code)
			}
			if !strings.Contains(string(body), `"param":`) || !strings.Contains(string(body), `"code":`) {
				t.Errorf("error %s; want param and code present, null if unset", body)
			}
			if n := len(a.Requests()); n != 0 {
				t.Errorf("%d requests recorded; want 0", n)
			}
			if n := a.Attempts(); n != 1 {
				t.Errorf("%d attempts; want 1", n)
			}
		})
	}
}

func TestFailNext(t *testing.T) {
	a := New(t)
	a.FailNext(http.StatusTooManyRequests, 2)
	a.FailNext(http.StatusInternalServerError, 1)

	// A request that does not match the reference is refused as such, and
	// does not use up a failure.
	bad := good()
	bad.auth = "-"
	if resp, body := bad.do(t, a); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d: %s; want 401", resp.StatusCode, body)
	}

	for i := range 2 {
		resp, body := good().do(t, a)
		var e errorBody
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode != http.StatusTooManyRequests || e.Error.Type != "requests" || e.Error.Code == nil || *e.Error.Code != "rate_limit_exceeded" {
			t.Fatalf("request %d: %d %s; want 429 rate_limit_exceeded", i, resp.StatusCode, body)
		}
		if got := resp.Header.Get("Retry-After"); got != "" {
			t.Errorf("Retry-After %q; want none", got)
		}
		if got := resp.Header.Get("X-Ratelimit-Remaining-Requests"); got != "0" {
			t.Errorf("x-ratelimit-remaining-requests %q; want 0", got)
		}
	}
	resp, body := good().do(t, a)
	var e errorBody
	_ = json.Unmarshal(body, &e)
	if resp.StatusCode != http.StatusInternalServerError || e.Error.Type != "server_error" {
		t.Fatalf("%d %s; want 500 server_error", resp.StatusCode, body)
	}
	if n := len(a.Requests()); n != 0 {
		t.Errorf("%d requests recorded while failing; want 0", n)
	}
	if resp, body := good().do(t, a); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the failures: %d %s; want 200", resp.StatusCode, body)
	}
	if n, m := len(a.Requests()), a.Attempts(); n != 1 || m != 5 {
		t.Errorf("%d requests, %d attempts; want 1, 5", n, m)
	}
}
