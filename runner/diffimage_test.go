package runner

import (
	"bytes"
	"image"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
)

// An approval request in a git workspace comes with the diff drawn as an
// image (added lines green, removed red); the text keeps the summary only.
func TestRunnerApprovalDiffImage(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Chromium: shottest.Chromium(t)})
	u := e.user(contract.ChannelWeb, "alice")
	e.job(u, "m1", `git init -q && printf 'one\ntwo\n' > a.txt && git add a.txt && git -c user.name=a -c user.email=a@b commit -q -m init &&
printf 'one\nTWO\n' > a.txt && printf 'new\n' > b.txt && echo changed`)
	ev := e.waitDone(u, "m1", runnerWait)
	if !ev.Approval || len(ev.Images) != 1 {
		t.Fatalf("approval %t with %d images; want an approval request with the diff image:\n%s", ev.Approval, len(ev.Images), ev.Text)
	}
	for _, want := range []string{"Changes waiting for your approval: 2 files, +2 −1", "M a.txt (+1 −1)", "A b.txt (+1 −0)", MsgApprove} {
		if !strings.Contains(ev.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, ev.Text)
		}
	}
	if strings.Contains(ev.Text, "+TWO") {
		t.Errorf("text quotes the diff beside its image:\n%s", ev.Text)
	}
	store, err := e.js.ObjectStore(t.Context(), contract.BucketMedia)
	if err != nil {
		t.Fatal(err)
	}
	data, err := store.GetBytes(t.Context(), ev.Images[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	// Backgrounds of added (#e6ffec) and removed (#ffebe9) lines.
	var green, red int
	b := m.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := m.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			switch {
			case g > 240 && r > 215 && r < 240 && bl > 225 && bl < 245:
				green++
			case r > 245 && g > 225 && g < 245 && bl > 220 && bl < 240:
				red++
			}
		}
	}
	t.Logf("%d×%d image, %d bytes: %d green and %d red samples", b.Dx(), b.Dy(), len(data), green, red)
	if green < 500 || red < 200 {
		t.Errorf("%d green and %d red samples; want the added lines green and the removed red", green, red)
	}
	// Eight short lines: the image is as tall as they are, with a small
	// margin, not the phone's whole screen (844 CSS pixels, drawn at
	// device scale 2) padded with white.
	if b.Dy() >= 844 {
		t.Errorf("%d×%d image; want it cropped to the diff's few lines (under 844 pixels high)", b.Dx(), b.Dy())
	}
}
