package runner

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/handover"
)

// A command agent's FILE_CAPTURED file comes with the reply as a file in
// the media store; one missing, outside or too big is named in the reply.
func TestRunnerFiles(t *testing.T) {
	for _, agent := range []string{"bash", AgentShell} {
		t.Run(agent, func(t *testing.T) { runnerFiles(t, agent) })
	}
}

// runnerFiles: agent's FILE_CAPTURED lines hand over files in the
// workspace, and only those.
func runnerFiles(t *testing.T, agent string) {
	e := newRunnerEnv(t)
	r, err := New(Config{Agent: agent, Workspaces: e.workspaces}, e.js, zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return")
		}
	})
	u := e.user(contract.ChannelTelegram, "42")
	e.job(u, "m1", strings.Join([]string{
		"printf 'a,b\\n1,2\\n' > out.csv",
		"head -c " + strconv.Itoa(handover.MaxFileBytes+1) + " /dev/zero > big.bin",
		"echo FILE_CAPTURED:out.csv",
		"echo FILE_CAPTURED:missing.csv",
		"echo FILE_CAPTURED:../../etc/passwd",
		"echo FILE_CAPTURED:big.bin",
		"echo done",
	}, "\n"))
	ev := e.waitDone(u, "m1", runnerWait)
	if len(ev.Images) != 1 {
		t.Fatalf("images %+v; want out.csv alone", ev.Images)
	}
	f := ev.Images[0]
	if f.Name != "out.csv" || contract.IsImage(f.ContentType) || f.Size != 8 || !strings.HasPrefix(f.ContentType, "text/") {
		t.Errorf("file %+v; want out.csv, 8 bytes of text", f)
	}
	store, err := e.js.ObjectStore(t.Context(), contract.BucketMedia)
	if err != nil {
		t.Fatal(err)
	}
	data, err := store.GetBytes(t.Context(), f.ID)
	if err != nil || string(data) != "a,b\n1,2\n" {
		t.Errorf("stored %q, %v; want the file's bytes", data, err)
	}
	info, err := store.GetInfo(t.Context(), f.ID)
	if err != nil || info.Headers.Get("Content-Type") != f.ContentType {
		t.Errorf("stored content type %v, %v; want %q", info, err, f.ContentType)
	}
	for _, want := range []string{"done", "missing.csv was not sent", "../../etc/passwd was not sent", "big.bin was not sent"} {
		if !strings.Contains(ev.Text, want) {
			t.Errorf("reply %q; want it to say %q", ev.Text, want)
		}
	}
	if strings.Contains(ev.Text, "FILE_CAPTURED") {
		t.Errorf("reply %q shows the markers", ev.Text)
	}
}
