package runner

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/agent"
	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/voice"
)

// What the person is told of their voice notes.
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

type errVoice struct{ msg string }

func (e errVoice) Error() string { return e.msg }

// hear makes a run's voice notes (if any) its text: what was heard is
// told to the person, then the run waits VoiceGrace, so that a cancel
// stops a misheard instruction before it runs. A refused error tells the
// person why the notes cannot be used, and the run must not go on.
func (r *Runner) hear(ctx context.Context, run *agent.Run, voices []attachment, command func(context.Context, string, ...string) *exec.Cmd, tell func(key, text string)) error {
	if len(voices) == 0 {
		return nil
	}
	said, err := r.listen(ctx, voices, command)
	var ev errVoice
	if errors.As(err, &ev) {
		return refuse(ev.msg)
	}
	if err != nil {
		return nil // the run's context ended: the caller reports how
	}
	tell("heard", fmt.Sprintf(MsgHeard, said))
	run.Job.Text, run.Spoken = joinText(run.Job.Text, said), true
	if r.cfg.VoiceGrace > 0 {
		select {
		case <-time.After(r.cfg.VoiceGrace):
		case <-ctx.Done():
		}
	}
	return nil
}

// listen transcribes a job's voice notes, in order, in the person's
// sandbox: ffmpeg decodes each (the audio is the person's, so it is
// decoded there, under the run's limits) to 16 kHz PCM, at most
// Config.VoiceMax of it, and the engine makes it text. An errVoice says
// what to tell the person.
func (r *Runner) listen(ctx context.Context, voices []attachment, command func(context.Context, string, ...string) *exec.Cmd) (string, error) {
	log := zerolog.Ctx(ctx)
	var said []string
	for _, v := range voices {
		if r.cfg.Transcriber == nil {
			return "", errVoice{fmt.Sprintf(MsgNoEngine, v.Path)}
		}
		if time.Duration(v.Media.Seconds)*time.Second > r.cfg.VoiceMax {
			return "", errVoice{fmt.Sprintf(MsgVoiceTooLong, contract.Duration(r.cfg.VoiceMax), v.Path)}
		}
		limit := int(r.cfg.VoiceMax.Seconds()*voice.PCMRate*2) + 2*voice.PCMRate*2
		cmd := command(ctx, "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-i", v.Path,
			"-t", fmt.Sprint(r.cfg.VoiceMax.Seconds()+1), "-ac", "1", "-ar", fmt.Sprint(voice.PCMRate), "-f", "s16le", "pipe:1")
		pcm, errOut := &output.CappedBuffer{Max: limit}, &output.CappedBuffer{Max: 4 << 10}
		cmd.Stdout, cmd.Stderr = pcm, errOut
		err := cmd.Run()
		sandbox.EndGroup(cmd)
		if err != nil {
			log.Warn().Err(err).Str("path", v.Path).Str("ffmpeg", strings.TrimSpace(errOut.String())).Msg("voice note not decoded")
			return "", errVoice{fmt.Sprintf(MsgVoiceFailed, v.Path)}
		}
		length := time.Duration(pcm.Len()) * time.Second / (2 * voice.PCMRate)
		if length > r.cfg.VoiceMax {
			return "", errVoice{fmt.Sprintf(MsgVoiceTooLong, contract.Duration(r.cfg.VoiceMax), v.Path)}
		}
		start := time.Now()
		text, err := r.cfg.Transcriber.Transcribe(ctx, voice.WAV(pcm.Bytes()), command)
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
