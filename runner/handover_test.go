package runner

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

func pngBytes(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Only a PNG or JPEG file inside the user's own workspace, symlinks
// followed, is taken as a screenshot.
func TestReadScreenshot(t *testing.T) {
	root := t.TempDir()
	ws, other := filepath.Join(root, "web.alice"), filepath.Join(root, "web.bob")
	for _, d := range []string{ws, other, filepath.Join(ws, "shots"), filepath.Join(ws, DropDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	img := pngBytes(t)
	write := func(path string, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ws, "shots", "app.png"), img)
	write(filepath.Join(ws, "notes.txt"), []byte("not an image"))
	write(filepath.Join(ws, "fake.png"), []byte("<svg/>"))
	write(filepath.Join(other, "secret.png"), img)
	write(filepath.Join(root, "outside.png"), img)
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(other, "secret.png"), "bobs.png")
	link("../outside.png", "up.png")
	link("shots/app.png", "inside-link.png")
	link("/etc/passwd", "passwd.png")
	link(filepath.Join(ws, "shots"), "dirlink")
	link("shots", "reldirlink")
	if err := syscall.Mkfifo(filepath.Join(ws, DropDir, "pipe.png"), 0o644); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(ws, DropDir, "pipe.png"), "pipelink.png")

	tests := []struct {
		path string
		ok   bool
	}{
		{"shots/app.png", true},
		{filepath.Join(ws, "shots", "app.png"), true},
		{"inside-link.png", true},
		{"reldirlink/app.png", true},
		// An absolute link is refused even when it points inside: names
		// resolve beneath the workspace (as openat2's RESOLVE_BENEATH).
		{"dirlink/app.png", false},
		{"../outside.png", false},
		{"../web.bob/secret.png", false},
		{filepath.Join(other, "secret.png"), false},
		{filepath.Join(root, "outside.png"), false},
		{"bobs.png", false},
		{"up.png", false},
		{"passwd.png", false},
		{"notes.txt", false},
		{"fake.png", false},
		{"shots", false},
		{".", false},
		{"missing.png", false},
		{"/proc/self/environ", false},
		{filepath.Join(DropDir, "pipe.png"), false}, // a FIFO: refused, never waited on
		{"pipelink.png", false},
	}
	for _, tt := range tests {
		data, err := readScreenshot(ws, tt.path)
		if tt.ok != (err == nil) {
			t.Errorf("%s: error %v; want ok %t", tt.path, err, tt.ok)
		}
		if tt.ok && !bytes.Equal(data, img) {
			t.Errorf("%s: read %d bytes; want the image", tt.path, len(data))
		}
	}
}

func TestDroppedOldestFirst(t *testing.T) {
	ws := t.TempDir()
	drop := filepath.Join(ws, DropDir)
	if err := os.MkdirAll(filepath.Join(drop, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"b.png", "a.png", "c.jpeg"} {
		p := filepath.Join(drop, name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Unix(1_700_000_000+int64(i), 0)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, f := range dropped(ws) {
		got = append(got, f.path)
	}
	want := []string{DropDir + "/b.png", DropDir + "/a.png", DropDir + "/c.jpeg"}
	if !slices.Equal(got, want) {
		t.Errorf("dropped %q; want %q", got, want)
	}
}

// Images a run handed over come with its reply however the run ended:
// cut by the timeout, cancelled, or failed (seed 000's partial results).
func TestRunnerImagesOfCutRuns(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Timeout: 2 * time.Second})
	// The output first: once the image is in place (when the cancel comes),
	// the output is already written.
	drop := "echo shot taken && mkdir -p " + DropDir + " && echo " + base64.StdEncoding.EncodeToString(pngBytes(t)) +
		" | base64 -d > " + DropDir + "/app.tmp && mv " + DropDir + "/app.tmp " + DropDir + "/app.png && "
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
				png := filepath.Join(e.workspaces, u.Key(), DropDir, "app.png")
				natstest.CheckFor(t, runnerWait, runnerPoll, func() error {
					if fi, err := os.Stat(png); err != nil || fi.Size() != int64(len(pngBytes(t))) {
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
	e.job(u, "m1", "mkdir -p "+DropDir+" && echo "+base64.StdEncoding.EncodeToString(pngBytes(t))+" | base64 -d > shot.png && "+
		"ln -s /etc/passwd "+DropDir+"/leak.png && ln -s ../../shot.png "+DropDir+"/mine.png && echo dropped")
	ev := e.waitDone(u, "m1", runnerWait)
	if !strings.Contains(ev.Text, "dropped") {
		t.Errorf("text %q; want the output", ev.Text)
	}
	if want := "The image " + DropDir + "/leak.png was not sent"; !strings.Contains(ev.Text, want) {
		t.Errorf("text %q; want it to say %q", ev.Text, want)
	}
	if strings.Contains(ev.Text, "mine.png") || len(ev.Images) != 1 {
		t.Errorf("text %q, images %+v; want the link within the workspace sent, unremarked", ev.Text, ev.Images)
	}
}
