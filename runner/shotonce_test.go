package runner

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/internal/testkit"
)

// An image an agent saves in tmp/ai_screenshots/ comes with the reply of
// the run that made it and no other, however the run named it: by a
// marker line (as it is, with ./ or absolute), with a caption, or not at
// all. The file is deleted once stored, so the next run's reply, which
// made no image, carries none.
func TestRunnerDroppedImageSentOnce(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Agent: AgentShell})
	png := base64.StdEncoding.EncodeToString(testkit.PNG(t))
	tests := []struct {
		name, say string // say: the line the run prints after saving the image (x.png)
	}{
		{"marker", "SCREENSHOT_CAPTURED:" + handover.DropDir + "/x.png"},
		{"marker with ./", "SCREENSHOT_CAPTURED:./" + handover.DropDir + "/x.png"},
		{"absolute marker", "SCREENSHOT_CAPTURED:$PWD/" + handover.DropDir + "/x.png"},
		{"caption", "IMAGE_GENERATED|" + handover.DropDir + "/x.png|the app"},
		{"plain file", "saved"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := e.user(contract.ChannelWhatsApp, fmt.Sprint("1555000100", i))
			e.job(u, "m1", "mkdir -p "+handover.DropDir+" && echo "+png+" | base64 -d > "+handover.DropDir+"/x.png && echo \""+tt.say+"\"")
			if ev := e.waitDone(u, "m1", runnerWait); len(ev.Images) != 1 {
				t.Fatalf("first reply %q with images %+v; want the image", ev.Text, ev.Images)
			}
			e.job(u, "m2", "echo again")
			if ev := e.waitDone(u, "m2", runnerWait); len(ev.Images) != 0 {
				t.Errorf("second reply %q with images %+v; want none: the run made no image", ev.Text, ev.Images)
			}
			left, _ := os.ReadDir(filepath.Join(e.workspaces, u.Key(), handover.DropDir))
			if len(left) != 0 {
				t.Errorf("%s holds %v; want it emptied once the image was stored", handover.DropDir, left)
			}
		})
	}
}
