package main

import (
	"image"
	_ "image/jpeg"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/claudetest"
	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
)

// An agent (as the unprivileged agent user when the test runs as root)
// runs `textslash shot` on the app it works on, served in its own
// sandbox; the screenshot reaches WhatsApp with the reply, through a
// signed link.
func TestWhatsAppShotOfApp(t *testing.T) {
	env := []string{"TEXTSLASH_CHROMIUM=" + shottest.Chromium(t)}
	if u := claudetest.AgentUser(t); u != "" {
		env = append(env, "TEXTSLASH_AGENT_USER="+u)
	}
	s := startTwilioServe(t, env...)
	port := freePort(t)
	app := `mkdir -p app && echo '<!doctype html><meta name=viewport content="width=device-width"><body style="background:#2a6"><h1>my app</h1>' > app/index.html && ` +
		`(python3 -m http.server ` + port + ` --bind 127.0.0.1 -d app >/dev/null 2>&1 &) && sleep 1 && `
	s.webhook(t, "whatsapp:"+phoneAlice, app+"textslash shot --full http://localhost:"+port+"/ && echo shot taken", nil)
	m := s.api.WaitMessages(t, 1, 30*time.Second)[0]
	if !strings.HasSuffix(m.Body, "shot taken") || len(m.MediaURLs) != 1 {
		t.Fatalf("message %q with media %q; want the reply and one image", m.Body, m.MediaURLs)
	}
	resp, err := http.Get(m.MediaURLs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cfg, format, err := image.DecodeConfig(resp.Body)
	if err != nil || format != "jpeg" || cfg.Width != 780 || cfg.Height != 1688 {
		t.Errorf("image: %s %d×%d, %v; want a 780×1688 JPEG (the phone viewport at scale 2)", format, cfg.Width, cfg.Height, err)
	}
}
