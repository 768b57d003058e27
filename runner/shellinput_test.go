package runner

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/runner/voice"
)

// jobWith publishes a job of text with files, stored in the media store as
// ingress stores what the web chat takes (contract.StoredMedia).
func (e *runnerEnv) jobWith(u contract.User, id, text string, files ...contract.Media) {
	e.t.Helper()
	j := contract.Job{ID: id, User: u, Text: text, Media: files, At: time.Now().UTC()}
	data, err := contract.Encode(&j)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.js.Publish(e.t.Context(), contract.JobSubject(u), data, jetstream.WithMsgID(contract.MsgID(u, id, "job"))); err != nil {
		e.t.Fatalf("publish job %s: %v", id, err)
	}
}

// stored puts data in the media store and returns it as a message's file.
func (e *runnerEnv) stored(name, contentType string, data []byte) contract.Media {
	e.t.Helper()
	store, err := e.js.ObjectStore(e.t.Context(), contract.BucketMedia)
	if err != nil {
		e.t.Fatal(err)
	}
	obj, err := bus.PutFile(e.t.Context(), store, contentType, name, data)
	if err != nil {
		e.t.Fatal(err)
	}
	return contract.Media{URL: contract.StoredMedia + obj.ID, ContentType: obj.ContentType, Name: obj.Name}
}

// The shell runs only what the person typed: a file sent without text
// (a browser's form sends a stray line break as \r\n) is saved and
// acknowledged, not run; with text, the text runs.
func TestShellRunsOnlyThePersonsText(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{})
	u := e.user(contract.ChannelWeb, "alice")
	csv := []byte("a,b\n1,2\n")
	tests := []struct {
		id, text, want string
	}{
		{"m1", "", "Saved inbox/m1-1-data.csv."},
		{"m2", "\r\n", "Saved inbox/m2-1-data.csv."},
		{"m3", "wc -l < inbox/m3-1-data.csv\r\n", "2"},
	}
	for _, tt := range tests {
		e.jobWith(u, tt.id, tt.text, e.stored("data.csv", "text/csv", csv))
		ev := e.waitDone(u, tt.id, runnerWait)
		if ev.Text != tt.want || ev.Status != contract.StatusOK {
			t.Errorf("job %s (text %q): got %s %q; want ok %q", tt.id, tt.text, ev.Status, ev.Text, tt.want)
		}
	}
}

// A voice note's words are what the person said: the shell runs them (the
// person was told what was heard first), and nothing else of the message.
func TestShellRunsTheWordsOfAVoiceNote(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Transcriber: &voice.Command{Command: "cat >/dev/null; echo echo heard it"}})
	u := e.user(contract.ChannelWeb, "alice")
	note := e.stored("", "audio/wav", voice.WAV(make([]byte, voice.PCMRate*2)))
	note.Voice = true
	e.jobWith(u, "v1", "\r\n", note)
	ev := e.waitDone(u, "v1", runnerWait)
	if ev.Text != "heard it" || ev.Status != contract.StatusOK {
		t.Errorf("voice note: got %s %q; want ok %q", ev.Status, ev.Text, "heard it")
	}
}

// A command agent is told the job's mode: modes are Claude Code's, and
// what one means to a command is up to it.
func TestCommandAgentIsToldTheMode(t *testing.T) {
	e := newRunnerEnv(t)
	e.startAgent(Config{Agent: `echo "mode=$` + ModeVar + `"`}, nil)
	u := e.user(contract.ChannelWeb, "alice")
	j := contract.Job{ID: "p1", User: u, Text: "plan it", Mode: contract.ModePlan, At: time.Now().UTC()}
	data, err := contract.Encode(&j)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.Publish(t.Context(), contract.JobSubject(u), data, jetstream.WithMsgID(contract.MsgID(u, j.ID, "job"))); err != nil {
		t.Fatal(err)
	}
	if ev := e.waitDone(u, "p1", runnerWait); ev.Text != "mode=plan" {
		t.Errorf("reply %q; want %q", ev.Text, "mode=plan")
	}
}
