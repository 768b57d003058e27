package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/output"
	"github.com/textslash/textslash/runner/sandbox"
)

// commandRun prepares a Run of message in a fresh workspace and records
// its progress lines.
func commandRun(t *testing.T, message string) (r *Run, progress *[]string) {
	t.Helper()
	r, _ = shellRun(t, message, nil)
	progress = new([]string)
	r.Progress = func(line string) { *progress = append(*progress, line) }
	return r, progress
}

func TestCommandOutput(t *testing.T) {
	tests := []struct {
		name         string
		line         string
		wantText     string
		wantProgress []string
		wantApproval bool
		wantShots    []Handover
	}{
		{
			name: "markers",
			line: `echo '::progress:: Reading the code'; echo 'Done: fixed it.'; echo '::progress::  Testing  '; ` +
				`echo '::progress::'; echo 'SCREENSHOT_CAPTURED: shots/a.jpg '; echo '  ::approval::  '; echo 'Bye'`,
			wantText:     "Done: fixed it.\nBye\n",
			wantProgress: []string{"Reading the code", "Testing"},
			wantApproval: true,
			wantShots:    []Handover{{Path: "shots/a.jpg"}},
		},
		{
			name:     "markers not at line start",
			line:     `echo 'say ::progress:: x'; echo ' ::progress:: y'; echo 'a SCREENSHOT_CAPTURED:b.png'; echo '::approval:: now'`,
			wantText: "say ::progress:: x\n ::progress:: y\na SCREENSHOT_CAPTURED:b.png\n::approval:: now\n",
		},
		{
			name:     "blank lines and no last newline",
			line:     `printf 'one\n\n\n::progress:: p\ntwo'`,
			wantText: "one\n\n\ntwo", wantProgress: []string{"p"},
		},
		{
			name:     "CRLF",
			line:     `printf '::progress:: p\r\n::approval::\r\nSCREENSHOT_CAPTURED:x.png\r\nok\r\n'`,
			wantText: "ok\r\n", wantProgress: []string{"p"}, wantApproval: true, wantShots: []Handover{{Path: "x.png"}},
		},
		{
			name:     "stderr is not the reply",
			line:     `echo out; echo '::progress:: err' >&2; echo err >&2`,
			wantText: "out\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, progress := commandRun(t, "hi")
			res, err := Command{Line: tt.line}.Run(t.Context(), r)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Text != tt.wantText {
				t.Errorf("text: got %q; want %q", res.Text, tt.wantText)
			}
			if !slices.Equal(*progress, tt.wantProgress) {
				t.Errorf("progress: got %q; want %q", *progress, tt.wantProgress)
			}
			if res.Approval != tt.wantApproval {
				t.Errorf("approval: got %v; want %v", res.Approval, tt.wantApproval)
			}
			if !slices.Equal(res.Handovers, tt.wantShots) {
				t.Errorf("handed over: got %+v; want %+v", res.Handovers, tt.wantShots)
			}
			if res.ExitCode != 0 || res.Truncated {
				t.Errorf("got exit %d truncated %v; want 0, false", res.ExitCode, res.Truncated)
			}
		})
	}
}

func TestCommandStdin(t *testing.T) {
	r, _ := commandRun(t, "fix the login page")
	r.Attachments = []string{"attachments/a.jpg"}
	res, err := Command{Line: "tr a-z A-Z"}.Run(t.Context(), r)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := "FIX THE LOGIN PAGE\n\n[THE PERSON ATTACHED THESE FILES, IN THE WORKSPACE: ATTACHMENTS/A.JPG]\n"
	if res.Text != want {
		t.Errorf("got %q; want %q", res.Text, want)
	}

	// A line-by-line reader sees the whole message.
	r, _ = commandRun(t, "one\ntwo")
	res, err = Command{Line: `while read -r l; do echo "[$l]"; done`}.Run(t.Context(), r)
	if err != nil || res.Text != "[one]\n[two]\n" {
		t.Errorf("read loop: got %q, %v; want %q", res.Text, err, "[one]\n[two]\n")
	}
}

func TestCommandFailure(t *testing.T) {
	r, _ := commandRun(t, "hi")
	res, err := Command{Line: `echo partial; echo 'something broke' >&2; exit 3`}.Run(t.Context(), r)
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("got error %v; want ErrFailed", err)
	}
	if !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "something broke") {
		t.Errorf("error: got %q; want the exit code and the end of stderr", err)
	}
	if res.Text != "partial\n" || res.ExitCode != 3 {
		t.Errorf("result: got %q exit %d; want %q exit 3", res.Text, res.ExitCode, "partial\n")
	}

	// A program that cannot start: its workspace is gone.
	r, _ = commandRun(t, "hi")
	r.Command = sandbox.CommandFunc(filepath.Join(r.Dir, "missing"), r.Dir, nil, false)
	res, err = Command{Line: "echo hi"}.Run(t.Context(), r)
	if err == nil || res.ExitCode != -1 {
		t.Errorf("start in a missing directory: got exit %d, %v; want -1 and an error", res.ExitCode, err)
	}
}

func TestCommandOutputCap(t *testing.T) {
	tests := []struct {
		line          string
		wantTruncated bool
		wantLen       int // of the text without the suffix
	}{
		{"yes | head -c 100000", true, 1000},
		{"yes | head -c 1000", false, 1000},
		{"head -c 2000000 /dev/zero", true, 1000}, // one line past maxMarkerLine
		{"for i in $(seq 1000); do echo '::progress:: p'; done; echo ok", false, 3},
	}
	for _, tt := range tests {
		r, _ := commandRun(t, "hi")
		r.OutputCap = 1000
		res, err := Command{Line: tt.line}.Run(t.Context(), r)
		if err != nil {
			t.Fatalf("%q: %v", tt.line, err)
		}
		checkCapped(t, fmt.Sprintf("%q", tt.line), res, r.OutputCap, tt.wantTruncated, tt.wantLen)
	}
}

func TestCommandCancelEndsProcessGroup(t *testing.T) {
	r, _ := commandRun(t, "hi")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type ran struct {
		res Result
		err error
	}
	ended := make(chan ran, 1)
	go func() {
		res, err := Command{Line: `echo started; echo $$ > pgid; sleep 600 & echo $! > child; sleep 600`}.Run(ctx, r)
		ended <- ran{res, err}
	}()
	pgid := readPID(t, filepath.Join(r.Dir, "pgid"))
	killGroupAtEnd(t, pgid)
	readPID(t, filepath.Join(r.Dir, "child"))

	cancel()
	var got ran
	select {
	case got = <-ended:
	case <-time.After(2 * time.Second):
		t.Fatalf("Run still going 2s after cancel")
	}
	if !errors.Is(got.err, ErrFailed) || !errors.Is(got.err, context.Canceled) {
		t.Errorf("got error %v; want ErrFailed and context.Canceled", got.err)
	}
	if got.res.Text != "started\n" {
		t.Errorf("text: got %q; want %q", got.res.Text, "started\n")
	}
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if alive := groupAlive(t, pgid); len(alive) > 0 {
			return fmt.Errorf("process group %d still has %q", pgid, alive)
		}
		return nil
	})
}

// FuzzCommandOutput checks that how the output is split into writes does
// not matter and that no marker line reaches the reply.
func FuzzCommandOutput(f *testing.F) {
	f.Add([]byte("a\n::progress:: p\n\nSCREENSHOT_CAPTURED:x\n ::approval:: \nb"), uint8(3))
	f.Add([]byte("::progress::\n::approval::x\n\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		whole := &commandOutput{reply: output.CappedBuffer{Max: 1 << 20}}
		whole.Write(data)
		whole.flush()
		parts := &commandOutput{reply: output.CappedBuffer{Max: 1 << 20}}
		for p := data; len(p) > 0; {
			n := min(len(p), int(chunk)+1)
			parts.Write(p[:n])
			p = p[n:]
		}
		parts.flush()
		if !bytes.Equal(whole.reply.Bytes(), parts.reply.Bytes()) || whole.approval != parts.approval ||
			!slices.Equal(whole.handovers, parts.handovers) {
			t.Errorf("whole: %q %v %+v; in chunks of %d: %q %v %+v", whole.reply.Bytes(), whole.approval, whole.handovers,
				int(chunk)+1, parts.reply.Bytes(), parts.approval, parts.handovers)
		}
		for line := range strings.Lines(whole.reply.String()) {
			if strings.HasPrefix(line, "::progress::") || strings.HasPrefix(line, "SCREENSHOT_CAPTURED:") ||
				strings.TrimSpace(line) == "::approval::" {
				t.Errorf("marker line %q in the reply %q", line, whole.reply.Bytes())
			}
		}
	})
}
