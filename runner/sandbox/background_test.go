package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/textslash/textslash/natstest"
)

// A process a run hands to its home (textslash background) outlives the
// run, with what it starts, and writes its output to a file of the
// workspace; what else the run left running still ends with it. Stopped,
// or with the home, it ends with all it started.
func TestHomeBackgroundOutlivesRuns(t *testing.T) {
	eachLimit(t, homeBox(t), func(t *testing.T, box *Sandbox, hs *Homes) { homeBackground(t, box, hs) })
}

func homeBackground(t *testing.T, box *Sandbox, hs *Homes) {
	ws, home := t.TempDir(), t.TempDir()
	defer hs.Close()
	h, leave, err := hs.Enter(box, ws, home, "", nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	command := h.Confined(CommandFunc(ws, home, nil, false))
	bg, err := h.StartBackground(command, BackgroundCall{Argv: []string{"sh", "-c", "echo serving; sleep 300.5151 & exec sleep 300.6161"}})
	if err != nil {
		t.Fatal(err)
	}
	outputOf(t, command, `(env -u TEXTSLASH_RUN setsid sh -c 'sleep 300.7171 >/dev/null 2>&1 &' &); sleep 0.2`)
	var child, root, escaped int
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		child, root, escaped = findProc("sleep\x00300.5151"), findProc("sleep\x00300.6161"), findProc("sleep\x00300.7171")
		if child == 0 || root == 0 || escaped == 0 {
			return errString(fmt.Sprintf("not all started yet: %d %d %d", child, root, escaped))
		}
		return nil
	})
	leave()
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if running(escaped) {
			return errString("the run's own setsid sleep outlived its run")
		}
		return nil
	})
	if !running(root) || !running(child) {
		t.Fatalf("the background process (%v) or its child (%v) ended with the run", running(root), running(child))
	}
	if got := h.Backgrounds(); len(got) != 1 || got[0].ID != bg.ID || !strings.Contains(got[0].Command, "300.6161") {
		t.Errorf("backgrounds %+v; want the one started", got)
	}
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		data, _ := os.ReadFile(filepath.Join(ws, bg.Log))
		if strings.TrimSpace(string(data)) != "serving" {
			return errString("log holds " + string(data))
		}
		return nil
	})

	// A second run's end leaves it too; stopped, it ends with its child.
	_, leave2, err := hs.Enter(box, ws, home, "", nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	leave2()
	if !running(root) || !running(child) {
		t.Fatal("the background process ended with the second run")
	}
	if n := h.StopBackground(bg.ID); n != 1 {
		t.Errorf("stopped %d; want 1", n)
	}
	if running(root) || running(child) {
		t.Errorf("stopped, the background process (%v) or its child (%v) still runs", running(root), running(child))
	}
	if got := h.Backgrounds(); len(got) != 0 {
		t.Errorf("backgrounds after stop: %+v", got)
	}

	// One more, ended with the home.
	if _, err := h.StartBackground(command, BackgroundCall{Argv: []string{"sh", "-c", "exec sleep 300.8181"}}); err != nil {
		t.Fatal(err)
	}
	var last int
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if last = findProc("sleep\x00300.8181"); last == 0 {
			return errString("not started")
		}
		return nil
	})
	hs.Close()
	if running(last) {
		t.Error("a background process outlived its home")
	}
}
