// Package transcribetest is a fake OpenAI-compatible speech-to-text API for
// tests: it takes POST /v1/audio/transcriptions the way OpenAI's API
// reference describes it (multipart/form-data with a file and a model,
// Bearer auth), answers in each response_format with a transcript the test
// sets, records the requests it accepts, and fails on request the way
// OpenAI does (429 rate limits, 500). A request that does not match the
// reference is refused with OpenAI's status and error body, so a client
// tested against the fake is checked against the reference too.
package transcribetest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Key is the API key the fake accepts, sent as "Authorization: Bearer <Key>".
const Key = "sk-textslash-transcribetest-key"

// Path is the path of the one endpoint the fake serves, under URL().
const Path = "/v1/audio/transcriptions"

// MaxBytes is the largest request body OpenAI takes (25 MiB); a larger one
// is refused with 413.
const MaxBytes = 25 << 20

// DefaultTranscript is what the fake transcribes any audio to until Say or
// Transcribe changes it.
const DefaultTranscript = "Hello from transcribetest."

// Formats are the file name extensions the reference lists for the file.
var Formats = []string{"flac", "mp3", "mp4", "mpeg", "mpga", "m4a", "ogg", "wav", "webm"}

// Request is one accepted transcription request.
type Request struct {
	Filename    string // the file part's filename
	ContentType string // the file part's Content-Type, "" if it had none
	Model       string
	Language    string // ISO-639-1, "" if not sent
	Prompt      string
	// ResponseFormat is the response_format sent, "" if not sent (json).
	ResponseFormat string
	Temperature    string // as sent, "" if not sent
	Size           int    // bytes of audio
	Key            string // the key of the Authorization header
	At             time.Time
}

// TranscribeFunc turns the audio of a request into its transcript; an
// error refuses the request with 400, its text as the message, the way
// OpenAI refuses audio it cannot decode.
type TranscribeFunc func(audio []byte, filename, language string) (string, error)

// API is the fake server.
type API struct {
	t   testing.TB
	url string

	mu         sync.Mutex
	transcribe TranscribeFunc
	failNext   []int // statuses of the next failures
	requests   []Request
	attempts   int
}

// New starts the fake; it stops with the test. It transcribes any audio to
// DefaultTranscript.
func New(t testing.TB) *API {
	a := &API{t: t}
	a.Say(DefaultTranscript)
	srv := httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(srv.Close)
	a.url = srv.URL
	return a
}

// URL is the base URL of the fake, without /v1: a client posts to
// URL()+"/v1/audio/transcriptions".
func (a *API) URL() string { return a.url }

// Say makes the fake transcribe any audio to text.
func (a *API) Say(text string) {
	a.Transcribe(func([]byte, string, string) (string, error) { return text, nil })
}

// Transcribe makes the fake transcribe with fn, called with the audio, the
// file part's filename and the language sent ("" if none), so a test can
// check the audio it was given.
func (a *API) Transcribe(fn TranscribeFunc) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.transcribe = fn
}

// FailNext makes the next n well-formed requests fail with the HTTP status
// (429 answers as OpenAI's rate limit does, with x-ratelimit headers and no
// Retry-After; 500 and 503 as OpenAI's server errors). A request the fake
// refuses for not matching the reference does not use up a failure.
func (a *API) FailNext(status, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for range n {
		a.failNext = append(a.failNext, status)
	}
}

// Requests returns the accepted requests so far, in order.
func (a *API) Requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Request(nil), a.requests...)
}

// Attempts counts the requests made, refused ones included.
func (a *API) Attempts() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts
}
