package runner

import (
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/jpeg"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/handover"
	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
)

// page serves a small page for the browser to take.
func page(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><meta name=viewport content="width=device-width"><body style="background:#2a6"><h1>app</h1>`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// An agent's run takes screenshots through the endpoint with the token in
// its environment; they come with its reply. The token is the run's alone:
// refused once the run is over, and no other URL than http(s) is taken.
func TestShotEndpoint(t *testing.T) {
	e := newRunnerEnv(t)
	e.start(Config{Chromium: shottest.Chromium(t)})
	u := e.user(contract.ChannelWeb, "alice")
	shoot := `curl -s -X POST -H "Authorization: Bearer $TEXTSLASH_SHOT_TOKEN" --data-urlencode url=%s %s "$TEXTSLASH_SHOT_URL"`
	url := page(t)
	script := strings.Join([]string{
		`echo "$TEXTSLASH_SHOT_URL $TEXTSLASH_SHOT_TOKEN" > endpoint`,
		fmt.Sprintf(shoot, url, ""),
		fmt.Sprintf(shoot, url, "-d desktop=1"),
		fmt.Sprintf(shoot, "file:///etc/passwd", ""),
		`curl -s -X POST "$TEXTSLASH_SHOT_URL"`, // no token
	}, "; echo; ")
	e.job(u, "s1", script)
	ev := e.waitDone(u, "s1", runnerWait)
	t.Logf("reply: %s", ev.Text)
	if ev.Status != contract.StatusOK || len(ev.Images) != 2 {
		t.Fatalf("got status %s and %d images; want ok and 2", ev.Status, len(ev.Images))
	}
	for _, want := range []string{`"id":"` + ev.Images[0].ID, `"id":"` + ev.Images[1].ID, "only http:// and https://", "no run of yours"} {
		if !strings.Contains(ev.Text, want) {
			t.Errorf("reply lacks %q", want)
		}
	}
	store, err := e.js.ObjectStore(t.Context(), contract.BucketMedia)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][2]int{{780, 1688}, {2880, 1800}} {
		img := ev.Images[i]
		data, err := store.GetBytes(t.Context(), img.ID)
		if err != nil {
			t.Fatalf("image %d: %v", i, err)
		}
		cfg, format, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil || format != "jpeg" || cfg.Width != want[0] || cfg.Height != want[1] ||
			img.Width != want[0] || img.Height != want[1] || img.Size != len(data) {
			t.Errorf("image %d: %s %d×%d (event %d×%d, %d bytes of %d), %v; want a %d×%d JPEG",
				i, format, cfg.Width, cfg.Height, img.Width, img.Height, img.Size, len(data), err, want[0], want[1])
		}
	}
	if n := len(e.events(u, contract.KindImage)); n != 2 {
		t.Errorf("%d image events; want 2", n)
	}

	// The run is over: its token no longer attaches anything.
	saved, err := os.ReadFile(filepath.Join(e.workspaces, u.Key(), "endpoint"))
	if err != nil {
		t.Fatal(err)
	}
	endpoint, token, _ := strings.Cut(strings.TrimSpace(string(saved)), " ")
	if _, err := handover.Shoot(context.Background(), endpoint, token, handover.ShotRequest{URL: url}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("shot with the token of a finished run: got %v; want 401", err)
	}
}
