package pageshot

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/runner/handover/pageshot/shottest"
)

// One person's shot of a page that sets a cookie; another person's shot
// of the same site does not send it: their pages share no profile.
func TestCaptureProfilesShareNoCookies(t *testing.T) {
	b := newBrowser(t, 30*time.Second)
	var mu sync.Mutex
	seen := map[string]string{} // path → Cookie header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.Header.Get("Cookie")
		mu.Unlock()
		if r.URL.Path == "/login" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "alice-secret", Path: "/", MaxAge: 3600})
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<h1>page</h1>"))
	}))
	t.Cleanup(srv.Close)
	for _, step := range []struct{ profile, path string }{
		{"web.alice", "/login"}, {"web.alice", "/alice-again"}, {"web.bob", "/bob"},
	} {
		if _, err := b.Capture(t.Context(), Options{URL: srv.URL + step.path, Profile: step.profile}); err != nil {
			t.Fatalf("%s %s: %v", step.profile, step.path, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(seen["/alice-again"], "alice-secret") {
		t.Errorf("alice's next shot sent cookies %q; want her own session (her tab is kept)", seen["/alice-again"])
	}
	if seen["/bob"] != "" {
		t.Errorf("bob's shot sent cookies %q; want none", seen["/bob"])
	}
}

// Given a user, Chromium runs as that user, with its own sandbox, and
// without textslash's environment.
func TestCaptureAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch users")
	}
	u, err := user.Lookup("textslash-agent")
	if err != nil {
		t.Skipf("no agent user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	t.Setenv("TEXTSLASH_SECRET_FOR_TEST", "must-not-reach-the-browser")
	b := New(Config{Bin: shottest.Chromium(t), User: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}})
	t.Cleanup(func() { b.Close() })
	srv := pages(t)
	if _, err := b.Capture(t.Context(), Options{URL: srv.URL + "/", Profile: "p"}); err != nil {
		t.Fatal(err)
	}
	pid := b.pid()
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Sys().(*syscall.Stat_t).Uid; got != uint32(uid) {
		t.Errorf("browser runs as uid %d; want %d", got, uid)
	}
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if strings.Contains(string(cmdline), "no-sandbox") {
		t.Errorf("browser runs without its sandbox: %q", cmdline)
	}
	env, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if strings.Contains(string(env), "must-not-reach-the-browser") {
		t.Error("the browser has textslash's environment")
	}
}
