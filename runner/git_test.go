package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
)

// approve commits the changes under the person's request that led to them
// (its first line, cut to a commit subject's length), saying it was
// approved from textslash; with no request known, under the old
// "Changes approved from textslash".
func TestApproveCommitMessage(t *testing.T) {
	long := "echo 'notes for the release, written out in full so that this first line runs on well past a subject' > notes.txt"
	tests := []struct {
		name, request   string
		subject, body   string
		withoutApproval bool // the changes are approved with no request of textslash's
	}{
		{"short request", "echo one > notes.txt\necho wrote", "echo one > notes.txt", "Approved from textslash.", false},
		{"long request", long, string([]rune(long)[:71]) + "…", "Approved from textslash.", false},
		{"no request", "", "Changes approved from textslash", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newRunnerEnv(t)
			e.start(Config{})
			u := e.user(contract.ChannelWeb, "alice")
			e.job(u, "m0", "git init -q && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m init && echo ok")
			e.waitDone(u, "m0", runnerWait)
			dir := filepath.Join(e.workspaces, u.Key())
			if tt.withoutApproval {
				if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if ev := e.run(contract.Job{ID: "m1", User: u, Text: tt.request}); !ev.Approval {
				t.Fatalf("run: no approval request (%q)", ev.Text)
			}
			if ev := e.run(contract.Job{ID: "a1", User: u, Action: contract.ActionApprove}); !strings.HasPrefix(ev.Text, "Committed the changes to 1 file") {
				t.Fatalf("approve: %q %q", ev.Status, ev.Text)
			}
			if got := gitIn(t, dir, "log", "-1", "--format=%s"); got != tt.subject {
				t.Errorf("commit subject %q; want %q", got, tt.subject)
			}
			if got := gitIn(t, dir, "log", "-1", "--format=%b"); got != tt.body {
				t.Errorf("commit body %q; want %q", got, tt.body)
			}
		})
	}
}
