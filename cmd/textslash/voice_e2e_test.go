package main

import (
	"bytes"
	le "encoding/binary"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/textslash/textslash/runner"
	"github.com/textslash/textslash/telegramtest"
	"github.com/textslash/textslash/transcribetest"
)

// speak makes a voice note of text as WhatsApp sends one: synth (espeak-ng
// or flite) speaks it to a WAV, ffmpeg makes it Opus in OGG (format: ogg)
// or WebM (webm, as the web chat page records).
func speak(t *testing.T, synth, text, format string) []byte {
	t.Helper()
	dir := t.TempDir()
	wav := filepath.Join(dir, "said.wav")
	var cmd *exec.Cmd
	switch synth {
	case "espeak-ng":
		cmd = exec.Command("espeak-ng", "-w", wav, text)
	case "flite":
		cmd = exec.Command("flite", "-voice", "rms", "-t", text, "-o", wav)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s (scripts/setup installs it)", synth, err, out)
	}
	note := filepath.Join(dir, "note."+format)
	if out, err := exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-i", wav, "-c:a", "libopus", "-b:a", "24k", note).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	data, err := os.ReadFile(note)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wavSeconds is the length of a 16 kHz mono 16-bit WAV, checking its header.
func wavSeconds(wav []byte) (float64, error) {
	if len(wav) < 44 || string(wav[:4]) != "RIFF" || string(wav[8:16]) != "WAVEfmt " || string(wav[36:40]) != "data" {
		return 0, fmt.Errorf("not a WAV file")
	}
	if rate := le.LittleEndian.Uint32(wav[24:]); rate != 16000 || le.LittleEndian.Uint16(wav[22:]) != 1 {
		return 0, fmt.Errorf("WAV at %d Hz, %d channels; want 16000, mono", rate, le.LittleEndian.Uint16(wav[22:]))
	}
	return float64(le.LittleEndian.Uint32(wav[40:])) / 32000, nil
}

func transcribeEnv(api *transcribetest.API, env ...string) []string {
	return append([]string{"TEXTSLASH_TRANSCRIBE_URL=" + api.URL() + "/v1", "TEXTSLASH_TRANSCRIBE_KEY=" + transcribetest.Key}, env...)
}

// A WhatsApp voice note, spoken by espeak-ng and sent as Opus in OGG the
// way WhatsApp sends it, is fetched from Twilio, decoded, transcribed by
// the speech API (which gets a 16 kHz WAV as long as the note), told back
// to the person first, and run: the shell's reply is the command's output.
func TestWhatsAppVoiceNote(t *testing.T) {
	stt := transcribetest.New(t)
	var heardSeconds float64
	stt.Transcribe(func(audio []byte, filename, language string) (string, error) {
		s, err := wavSeconds(audio)
		heardSeconds = s
		if err != nil || s < 0.5 {
			return "", fmt.Errorf("audio: %v, %.2fs", err, s)
		}
		return "echo forty two", nil
	})
	s := startTwilioServe(t, transcribeEnv(stt, "TEXTSLASH_VOICE_GRACE=0s")...)
	note := speak(t, "espeak-ng", "echo forty two", "ogg")
	s.webhook(t, "whatsapp:"+phoneAlice, "", url.Values{
		"NumMedia": {"1"}, "MediaUrl0": {s.api.AddMedia("audio/ogg", note)}, "MediaContentType0": {"audio/ogg"},
	})
	msgs := s.api.WaitMessages(t, 2, 30*time.Second)
	if got, want := sentBodies(msgs), []string{fmt.Sprintf(runner.MsgHeard, "echo forty two"), "forty two"}; !equalStrings(got, want) {
		t.Errorf("messages %q; want %q (the transcript first)", got, want)
	}
	reqs := stt.Requests()
	if len(reqs) != 1 || reqs[0].Model != "whisper-1" || reqs[0].Filename != "voice.wav" || heardSeconds < 0.5 || heardSeconds > 3 {
		t.Errorf("transcription requests %+v (%.2fs of audio); want one whisper-1 request with the note as a WAV", reqs, heardSeconds)
	}
}

// After "Heard: …" the person has TEXTSLASH_VOICE_GRACE to cancel a
// misheard instruction: it never runs. Notes too long, or that the engine
// fails on, are refused with a message and kept in the inbox.
func TestVoiceNoteCancelAndRefusals(t *testing.T) {
	stt := transcribetest.New(t)
	stt.Say("touch ran; echo ran")
	s := startTwilioServe(t, transcribeEnv(stt, "TEXTSLASH_VOICE_GRACE=20s", "TEXTSLASH_VOICE_MAX=4s")...)
	voice := func(text string) {
		t.Helper()
		s.webhook(t, "whatsapp:"+phoneAlice, "", url.Values{
			"NumMedia": {"1"}, "MediaUrl0": {s.api.AddMedia("audio/ogg", speak(t, "espeak-ng", text, "ogg"))}, "MediaContentType0": {"audio/ogg"},
		})
	}
	voice("touch ran")
	s.api.WaitMessages(t, 1, 30*time.Second)
	s.webhook(t, "whatsapp:"+phoneAlice, "cancel", nil)
	// The transcript and the dispatcher's word on cancel; the run, stopped
	// before it printed anything, adds nothing.
	sent := 2
	msgs := s.api.WaitMessages(t, sent, 15*time.Second)
	if got := sentBodies(msgs); got[0] != fmt.Sprintf(runner.MsgHeard, "touch ran; echo ran") || !strings.HasPrefix(got[1], "Cancelled.") {
		t.Errorf("messages %q; want the transcript, then the word on cancel", got)
	}
	next := func(send func()) string {
		t.Helper()
		send()
		sent++
		return s.api.WaitMessages(t, sent, 30*time.Second)[sent-1].Body
	}
	// About six seconds of speech, over the 4 s limit.
	if got := next(func() { voice("this voice note goes on and on for much longer than four seconds, which is the limit") }); !strings.HasPrefix(got, "Your voice note is longer than 4s") || !strings.Contains(got, "inbox/") {
		t.Errorf("long note: %q; want it refused, saved in the inbox", got)
	}
	stt.FailNext(500, 1)
	if got := next(func() { voice("touch ran") }); !strings.HasPrefix(got, "I couldn't make out your voice note") {
		t.Errorf("engine failure: %q; want the person told", got)
	}
	if got := next(func() { s.webhook(t, "whatsapp:"+phoneAlice, "ls; ls inbox | wc -l", nil) }); got != "inbox\n3" {
		t.Errorf("ls: %q; want the three notes kept in the inbox and nothing run", got)
	}
}

// The local engine: Debian's pocketsphinx, run in the person's sandbox,
// recognises a sentence flite speaks well enough to act on. (It does
// poorly on espeak-ng's voice; see the README.)
func TestVoiceNoteLocalEngine(t *testing.T) {
	s := startTwilioServe(t, "TEXTSLASH_TRANSCRIBE_COMMAND=pocketsphinx_continuous -infile /dev/stdin -logfn /dev/null",
		"TEXTSLASH_VOICE_GRACE=0s", "TEXTSLASH_AGENT=cat")
	s.webhook(t, "whatsapp:"+phoneAlice, "", url.Values{
		"NumMedia": {"1"}, "MediaUrl0": {s.api.AddMedia("audio/ogg", speak(t, "flite", "please run the tests and show me the result", "ogg"))},
		"MediaContentType0": {"audio/ogg"},
	})
	msgs := s.api.WaitMessages(t, 2, 60*time.Second)
	heard, reply := msgs[0].Body, msgs[1].Body
	for _, w := range []string{"run", "tests", "result"} {
		if !strings.Contains(heard, w) || !strings.Contains(reply, w) {
			t.Errorf("heard %q, agent got %q; want both to have %q", heard, reply, w)
		}
	}
}

// A PDF sent on Telegram lands in the inbox under its own name, made safe;
// a file over the limit gets a message and runs nothing of it.
func TestTelegramFileToInbox(t *testing.T) {
	api := telegramtest.NewAPI(t)
	inst := startServe(t, append(telegramEnv(api), "TEXTSLASH_AGENT=shell")...)
	pdf := []byte("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n")
	api.AddFile("DOC1", pdf)
	api.AddFile("BIG1", bytes.Repeat([]byte("x"), 16<<20+1))
	doc := func(update int, fileID, name, caption string) []byte {
		b, _ := json.Marshal(map[string]any{"update_id": update, "message": map[string]any{
			"message_id": update, "date": 1, "chat": map[string]any{"id": 4242, "type": "private"}, "caption": caption,
			"document": map[string]any{"file_id": fileID, "file_unique_id": fileID, "file_name": name, "mime_type": "application/pdf"},
		}})
		return b
	}
	if code := telegramUpdate(t, inst, tgSecret, doc(20, "DOC1", "../Q3 report.pdf", "ls inbox; cmp inbox/* /dev/stdin < /dev/null; wc -c < inbox/*")); code != http.StatusOK {
		t.Fatalf("update: %d", code)
	}
	calls := api.WaitCalls(t, 1, 30*time.Second)
	if want := fmt.Sprintf("tg20-1-Q3_report.pdf\n%d", len(pdf)); !strings.HasPrefix(calls[0].Text, "tg20-1-Q3_report.pdf") || !strings.HasSuffix(calls[0].Text, fmt.Sprint(len(pdf))) {
		t.Errorf("reply %q; want the file listed under its safe name and its size (%q)", calls[0].Text, want)
	}
	if code := telegramUpdate(t, inst, tgSecret, doc(21, "BIG1", "huge.pdf", "ls inbox")); code != http.StatusOK {
		t.Fatalf("update: %d", code)
	}
	calls = api.WaitCalls(t, 3, 30*time.Second)[1:]
	if !strings.HasPrefix(calls[0].Text, `I couldn't take "huge.pdf": it is larger than 16 MB`) || calls[1].Text != "tg20-1-Q3_report.pdf" {
		t.Errorf("replies %q, %q; want the big file refused, and the inbox unchanged", calls[0].Text, calls[1].Text)
	}
}

// The web chat takes a file and a recording from the page's microphone
// (Opus in WebM, as Chrome records): the file lands in the inbox, the
// recording is transcribed and run.
func TestWebChatFileAndRecording(t *testing.T) {
	stt := transcribetest.New(t)
	stt.Say("echo heard from the web")
	inst := startServe(t, transcribeEnv(stt, "TEXTSLASH_AGENT=shell", "TEXTSLASH_VOICE_GRACE=0s")...)
	c := inst.newChat(t)
	events := c.events(t.Context())
	upload := func(name, contentType string, data []byte, text string, voice bool) (*http.Response, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, name)}
		h["Content-Type"] = []string{contentType}
		fw, _ := mw.CreatePart(h)
		fw.Write(data)
		mw.WriteField("text", text)
		if voice {
			mw.WriteField("voice", "1")
		}
		mw.Close()
		resp, err := c.client.Post(inst.URL+"/api/files", mw.FormDataContentType(), &body)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ ID, Error string }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp, out.ID + out.Error
	}
	resp, id := upload("notes.csv", "text/csv", []byte("a,b\n1,2\n"), "ls inbox; cat inbox/*", false)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %s %s", resp.Status, id)
	}
	done := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	if want := id + "-1-notes.csv\na,b\n1,2"; done.Event.Text != want {
		t.Errorf("reply %q; want %q", done.Event.Text, want)
	}
	if resp, msg := upload("rec.webm", "audio/webm", speak(t, "espeak-ng", "echo heard", "webm"), "", true); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("recording: %s %s", resp.Status, msg)
	}
	heard := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "notice" })
	done = waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	if heard.Event.Text != fmt.Sprintf(runner.MsgHeard, "echo heard from the web") || done.Event.Text != "heard from the web" {
		t.Errorf("recording: %q then %q; want the transcript, then its output", heard.Event.Text, done.Event.Text)
	}
	if resp, msg := upload("empty.txt", "text/plain", nil, "", false); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("empty file: %s %s; want 400", resp.Status, msg)
	}
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

// In real Chromium, the page's file button sends a file with what is typed
// as its text; the page has a microphone button where recording is possible.
func TestWebChatUploadInBrowser(t *testing.T) {
	ctx := browser(t, 60*time.Second) // first: skips without Chromium
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(inst.URL+"/"),
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.SendKeys(chromedp.ID("input"), "cat inbox/*-1-in.csv"),
	); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	mic, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['a,b\n1,2\n'], 'in.csv', {type: 'text/csv'}));
		const fi = document.getElementById('file');
		fi.files = dt.files;
		fi.dispatchEvent(new Event('change'));
		return !document.getElementById('mic').hidden;
	})()`))
	if err != nil || !mic {
		t.Fatalf("upload: %v; microphone button shown: %v", err, mic)
	}
	waitPage(ctx, t, `(want) => document.getElementById('messages').innerText.includes(want)`, "a,b\n1,2", "the file's content in the reply")
	mine, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#messages .bubble.mine').textContent`))
	if err != nil || !strings.Contains(mine, "in.csv") || !strings.Contains(mine, "cat inbox") {
		t.Errorf("the person's bubble %q, %v; want the file's name and the text sent with it", mine, err)
	}
}
