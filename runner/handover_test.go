package runner

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/internal/testkit"
)

// Images a run handed over come with its reply however the run ended:
// cut by the timeout, cancelled, or failed, the person still gets the
// images it made before it ended.
func TestRunnerImagesOfCutRuns(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: 2 * time.Second})
	// The output first: once the image is in place (when the cancel comes),
	// the output is already written.
	drop := "echo shot taken && mkdir -p " + handover.DropDir + " && echo " + base64.StdEncoding.EncodeToString(testkit.PNG(t)) +
		" | base64 -d > " + handover.DropDir + "/app.tmp && mv " + handover.DropDir + "/app.tmp " + handover.DropDir + "/app.png && "
	tests := []struct {
		name, text string
		cancel     bool
		want       string // status
	}{
		{"timeout", drop + "sleep 30", false, contract.StatusTimeout},
		{"cancel", drop + "sleep 30", true, contract.StatusCanceled},
		{"failure", drop + "exit 3", false, contract.StatusOK},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := e.user(contract.ChannelWhatsApp, fmt.Sprint("1555000000", i))
			e.job(u, "m1", tt.text)
			if tt.cancel {
				// Cancel once the image is in place.
				png := filepath.Join(e.workspaces, u.Key(), handover.DropDir, "app.png")
				natstest.CheckFor(t, runnerWait, runnerPoll, func() error {
					if fi, err := os.Stat(png); err != nil || fi.Size() != int64(len(testkit.PNG(t))) {
						return fmt.Errorf("no image dropped yet (%v)", err)
					}
					return nil
				})
				if err := e.js.Conn().Publish(contract.CancelSubject(u), []byte("m1")); err != nil {
					t.Fatal(err)
				}
			}
			ev := e.waitDone(u, "m1", runnerWait)
			if ev.Status != tt.want {
				t.Errorf("status %q (%q); want %q", ev.Status, ev.Text, tt.want)
			}
			if !strings.Contains(ev.Text, "shot taken") {
				t.Errorf("text %q; want the output so far", ev.Text)
			}
			if len(ev.Images) != 1 || ev.Images[0].ContentType != "image/jpeg" || ev.Images[0].Width != 4 {
				t.Errorf("images %+v; want the dropped PNG as one 4×3 JPEG", ev.Images)
			}
		})
	}
}

// A link an agent drops in tmp/ai_screenshots/ that leads out of the
// workspace is not sent, and the reply says so, as it says of any file it
// does not send; a link within the workspace is sent.
func TestRunnerDropDirLinkSaid(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{})
	u := e.user(contract.ChannelWhatsApp, "15550001234")
	e.job(u, "m1", "mkdir -p "+handover.DropDir+" && echo "+base64.StdEncoding.EncodeToString(testkit.PNG(t))+" | base64 -d > shot.png && "+
		"ln -s /etc/passwd "+handover.DropDir+"/leak.png && ln -s ../../shot.png "+handover.DropDir+"/mine.png && echo dropped")
	ev := e.waitDone(u, "m1", runnerWait)
	if !strings.Contains(ev.Text, "dropped") {
		t.Errorf("text %q; want the output", ev.Text)
	}
	if want := "The image " + handover.DropDir + "/leak.png was not sent"; !strings.Contains(ev.Text, want) {
		t.Errorf("text %q; want it to say %q", ev.Text, want)
	}
	if strings.Contains(ev.Text, "mine.png") || len(ev.Images) != 1 {
		t.Errorf("text %q, images %+v; want the link within the workspace sent, unremarked", ev.Text, ev.Images)
	}
}
