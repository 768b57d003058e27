package runner

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/sandbox"
)

// Transcriber turns speech into text: the production path is any
// OpenAI-compatible transcription endpoint (OpenAI, Groq, a local
// whisper.cpp or faster-whisper server); a local program can stand in
// (CommandTranscriber).
type Transcriber interface {
	// Transcribe returns what is said in wav, 16 kHz mono 16-bit PCM.
	// command starts a program in the person's sandbox.
	Transcribe(ctx context.Context, wav []byte, command func(ctx context.Context, name string, args ...string) *exec.Cmd) (string, error)
}

// OpenAITranscriber posts to an OpenAI-compatible /audio/transcriptions.
type OpenAITranscriber struct {
	// URL is the API's base, with its version: https://api.openai.com/v1,
	// https://api.groq.com/openai/v1, http://127.0.0.1:8000/v1.
	URL, Key string
	// Model defaults to whisper-1; Language (ISO-639-1) is optional.
	Model, Language string
	Client          *http.Client
}

// Transcribe sends wav as voice.wav and returns the json response's text.
func (t *OpenAITranscriber) Transcribe(ctx context.Context, wav []byte, _ func(context.Context, string, ...string) *exec.Cmd) (string, error) {
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

// CommandTranscriber runs a program (bash -c Command) in the person's
// sandbox with the WAV on its standard input; what it prints is the text.
// Debian's pocketsphinx: pocketsphinx_continuous -infile /dev/stdin -logfn /dev/null.
type CommandTranscriber struct{ Command string }

// Transcribe runs the command on wav. Its standard input is a pipe of the
// agent user's own (through cat), so that programs that open /dev/stdin
// by name may: the runner's pipe is not theirs to open.
func (t *CommandTranscriber) Transcribe(ctx context.Context, wav []byte, command func(context.Context, string, ...string) *exec.Cmd) (string, error) {
	cmd := command(ctx, "bash", "-c", "cat | {\n"+t.Command+"\n}")
	cmd.Stdin = bytes.NewReader(wav)
	out, errOut := &sandbox.CappedBuffer{Max: 64 << 10}, &sandbox.CappedBuffer{Max: 4 << 10}
	cmd.Stdout, cmd.Stderr = out, errOut
	err := cmd.Run()
	sandbox.EndGroup(cmd)
	if err != nil {
		return "", fmt.Errorf("transcription command: %w: %s", err, strings.TrimSpace(errOut.String()))
	}
	return strings.Join(strings.Fields(out.String()), " "), nil
}

// Voice notes.
const (
	// MsgHeard is the transcript, sent to the person before the agent runs.
	MsgHeard = "Heard: “%s”"
	// MsgNoEngine: voice notes arrive but no speech engine is set.
	MsgNoEngine = "I can't listen to voice notes here (no speech engine is set up); it's saved as %s. Send it as text."
	// MsgVoiceTooLong: over Config.VoiceMax.
	MsgVoiceTooLong = "Your voice note is longer than %s, the most I take; it's saved as %s. Send a shorter one, or type it."
	// MsgVoiceFailed: the engine failed; the audio stays in the inbox.
	MsgVoiceFailed = "I couldn't make out your voice note; it's saved as %s. Send it again, or type it."
	// MsgVoiceSilent: the engine heard nothing.
	MsgVoiceSilent = "I heard nothing in your voice note (saved as %s). Send it again, or type it."
)

// pcmRate is the sample rate voice notes are decoded to: 16 kHz mono
// 16-bit, what speech engines take; 32,000 bytes a second.
const pcmRate = 16000

// errVoice is what the person is told when a voice note cannot be used.
type errVoice struct{ msg string }

func (e errVoice) Error() string { return e.msg }

// hear makes a run's voice notes (if any) its text: what was heard is
// told to the person, then the run waits VoiceGrace, so that a cancel
// stops a misheard instruction before it runs. It returns what to tell
// the person when the notes cannot be used, and the run must not go on.
func (r *Runner) hear(ctx context.Context, log zerolog.Logger, run *agent.Run, voices []attachment, command func(context.Context, string, ...string) *exec.Cmd, tell func(key, text string)) (refusal string) {
	if len(voices) == 0 {
		return ""
	}
	said, err := r.listen(ctx, log, voices, command)
	var ev errVoice
	if errors.As(err, &ev) {
		return ev.msg
	}
	if err != nil {
		return "" // the run's context ended: the caller reports how
	}
	tell("heard", fmt.Sprintf(MsgHeard, said))
	run.Job.Text, run.Spoken = joinText(run.Job.Text, said), true
	if r.cfg.VoiceGrace > 0 {
		select {
		case <-time.After(r.cfg.VoiceGrace):
		case <-ctx.Done():
		}
	}
	return ""
}

// listen transcribes a job's voice notes, in order, in the person's
// sandbox: ffmpeg decodes each (the audio is the person's, so it is
// decoded there, under the run's limits) to 16 kHz PCM, at most
// Config.VoiceMax of it, and the engine makes it text. An errVoice says
// what to tell the person.
func (r *Runner) listen(ctx context.Context, log zerolog.Logger, voices []attachment, command func(context.Context, string, ...string) *exec.Cmd) (string, error) {
	var said []string
	for _, v := range voices {
		if r.cfg.Transcriber == nil {
			return "", errVoice{fmt.Sprintf(MsgNoEngine, v.Path)}
		}
		if time.Duration(v.Media.Seconds)*time.Second > r.cfg.VoiceMax {
			return "", errVoice{fmt.Sprintf(MsgVoiceTooLong, contract.Duration(r.cfg.VoiceMax), v.Path)}
		}
		limit := int(r.cfg.VoiceMax.Seconds()*pcmRate*2) + 2*pcmRate*2
		cmd := command(ctx, "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-i", v.Path,
			"-t", fmt.Sprint(r.cfg.VoiceMax.Seconds()+1), "-ac", "1", "-ar", fmt.Sprint(pcmRate), "-f", "s16le", "pipe:1")
		pcm, errOut := &sandbox.CappedBuffer{Max: limit}, &sandbox.CappedBuffer{Max: 4 << 10}
		cmd.Stdout, cmd.Stderr = pcm, errOut
		err := cmd.Run()
		sandbox.EndGroup(cmd)
		if err != nil {
			log.Warn().Err(err).Str("path", v.Path).Str("ffmpeg", strings.TrimSpace(errOut.String())).Msg("voice note not decoded")
			return "", errVoice{fmt.Sprintf(MsgVoiceFailed, v.Path)}
		}
		length := time.Duration(pcm.Len()) * time.Second / (2 * pcmRate)
		if length > r.cfg.VoiceMax {
			return "", errVoice{fmt.Sprintf(MsgVoiceTooLong, contract.Duration(r.cfg.VoiceMax), v.Path)}
		}
		start := time.Now()
		text, err := r.cfg.Transcriber.Transcribe(ctx, wavFile(pcm.Bytes()), command)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			log.Warn().Err(err).Str("path", v.Path).Msg("voice note not transcribed")
			return "", errVoice{fmt.Sprintf(MsgVoiceFailed, v.Path)}
		}
		log.Info().Str("path", v.Path).Dur("length_ms", length).Dur("took_ms", time.Since(start)).Int("text_len", len(text)).Msg("voice note transcribed")
		if text == "" {
			return "", errVoice{fmt.Sprintf(MsgVoiceSilent, v.Path)}
		}
		said = append(said, text)
	}
	return strings.Join(said, "\n"), nil
}

// wavFile wraps 16 kHz mono 16-bit PCM in a WAV header.
func wavFile(pcm []byte) []byte {
	var b bytes.Buffer
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + len(pcm)))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1)) // PCM
	w(uint16(1)) // mono
	w(uint32(pcmRate))
	w(uint32(pcmRate * 2))
	w(uint16(2))
	w(uint16(16))
	b.WriteString("data")
	w(uint32(len(pcm)))
	b.Write(pcm)
	return b.Bytes()
}
