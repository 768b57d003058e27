// Package voice turns speech into text: a Transcriber, either any
// OpenAI-compatible transcription endpoint (OpenAI) or a program of the
// operator's (Command), and WAV, which wraps the PCM voice notes are
// decoded to.
package voice

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// Transcriber turns speech into text: the production path is any
// OpenAI-compatible transcription endpoint (OpenAI, Groq, a local
// whisper.cpp or faster-whisper server); a local program can stand in
// (Command).
type Transcriber interface {
	// Transcribe returns what is said in wav, 16 kHz mono 16-bit PCM.
	// command starts a program in the person's sandbox.
	Transcribe(ctx context.Context, wav []byte, command func(ctx context.Context, name string, args ...string) *exec.Cmd) (string, error)
}

// OpenAI posts to an OpenAI-compatible /audio/transcriptions.
type OpenAI struct {
	// URL is the API's base, with its version: https://api.openai.com/v1,
	// https://api.groq.com/openai/v1, http://127.0.0.1:8000/v1.
	URL, Key string
	// Model defaults to whisper-1; Language (ISO-639-1) is optional.
	Model, Language string
	Client          *http.Client
}

// Transcribe sends wav as voice.wav and returns the json response's text.
func (t *OpenAI) Transcribe(ctx context.Context, wav []byte, _ func(context.Context, string, ...string) *exec.Cmd) (string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", "voice.wav")
	if err != nil {
		return "", err
	}
	fw.Write(wav)
	model := t.Model
	if model == "" {
		model = "whisper-1"
	}
	mw.WriteField("model", model)
	mw.WriteField("response_format", "json")
	if t.Language != "" {
		mw.WriteField("language", t.Language)
	}
	if err := mw.Close(); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(t.URL, "/")+"/audio/transcriptions", &body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if t.Key != "" {
		req.Header.Set("Authorization", "Bearer "+t.Key)
	}
	client := t.Client
	if client == nil {
		client = &http.Client{Timeout: 2 * time.Minute}
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("transcription: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Text  string `json:"text"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &out)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("transcription: %s: %s", resp.Status, out.Error.Message)
	}
	return strings.TrimSpace(out.Text), nil
}

// Command runs a program (bash -c Command) in the person's
// sandbox with the WAV on its standard input; what it prints is the text.
// Debian's pocketsphinx: pocketsphinx_continuous -infile /dev/stdin -logfn /dev/null.
type Command struct{ Command string }

// Transcribe runs the command on wav. Its standard input is a pipe of the
// agent user's own (through cat), so that programs that open /dev/stdin
// by name may: the runner's pipe is not theirs to open.
func (t *Command) Transcribe(ctx context.Context, wav []byte, command func(context.Context, string, ...string) *exec.Cmd) (string, error) {
	cmd := command(ctx, "bash", "-c", "cat | {\n"+t.Command+"\n}")
	cmd.Stdin = bytes.NewReader(wav)
	out, errOut := &output.CappedBuffer{Max: 64 << 10}, &output.CappedBuffer{Max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, errOut
	err := cmd.Run()
	sandbox.EndGroup(cmd)
	if err != nil {
		return "", fmt.Errorf("transcription command: %w: %s", err, strings.TrimSpace(errOut.String()))
	}
	return strings.Join(strings.Fields(out.String()), " "), nil
}

// PCMRate is the sample rate voice notes are decoded to: 16 kHz mono
// 16-bit, what speech engines take; 32,000 bytes a second.
const PCMRate = 16000

// errVoice is what the person is told when a voice note cannot be used.

// WAV wraps 16 kHz mono 16-bit PCM in a WAV header.
func WAV(pcm []byte) []byte {
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + len(pcm)))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1)) // PCM
	w(uint16(1)) // mono
	w(uint32(PCMRate))
	w(uint32(PCMRate * 2))
	w(uint16(2))
	w(uint16(16))
	b.WriteString("data")
	w(uint32(len(pcm)))
	b.Write(pcm)
	return b.Bytes()
}
