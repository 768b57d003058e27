package runner

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/runner/sandbox"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// hitServer is an HTTP server on every address of this machine (its
// loopback, where the web chat and NATS listen, and its own addresses)
// that records the paths asked of it.
type hitServer struct {
	port string
	mu   sync.Mutex
	hits []string
}

func newHitServer(t *testing.T) *hitServer {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	s := &hitServer{}
	_, s.port, _ = net.SplitHostPort(l.Addr().String())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits = append(s.hits, r.URL.Path)
		s.mu.Unlock()
		_, _ = w.Write([]byte("host-secret\n"))
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *hitServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hits...)
}

// hookScript is a git hook that notes in $HOME/hook-got that it ran, then
// asks the host's server (on its loopback and on each of the machine's
// own addresses) for a page and notes what it got.
func (s *hitServer) hookScript(name string) string {
	addrs := []string{"127.0.0.1"}
	own, _ := netns.HostAddrs()
	for _, p := range own {
		if p.Addr().Is4() {
			addrs = append(addrs, p.Addr().String())
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/bash\necho ran %s >> \"$HOME/hook-got\"\n", name)
	for _, a := range addrs {
		fmt.Fprintf(&b, "(exec 3<>/dev/tcp/%s/%s && printf 'GET /%s HTTP/1.0\\r\\n\\r\\n' >&3 && timeout 2 cat <&3) >> \"$HOME/hook-got\" 2>&1 || echo %s: no connection >> \"$HOME/hook-got\"\n", a, s.port, name, a)
	}
	return b.String() + "exit 0\n"
}

// plant is a shell command that writes hook name (to the hooks directory
// of the repository the run is in) and makes it executable.
func (s *hitServer) plant(name string) string {
	return fmt.Sprintf(`h="$(git rev-parse --git-common-dir)/hooks"; mkdir -p "$h"; echo %s | base64 -d > "$h/%s"; chmod +x "$h/%s"`,
		base64.StdEncoding.EncodeToString([]byte(s.hookScript(name))), name, name)
}

// The agent owns its repository's .git: a hook it plants runs when the
// runner's git runs there (approve's commit, a branch's worktree made for
// the next message). That git has no way to the host's loopback or the
// machine's own addresses either: the web chat, NATS and other people's
// servers stay out of reach, as they are from the agent's home.
func TestGitHooksOffHostNetwork(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("homes, with their network, need root")
	}
	au := testAgentUser(t) // as root, the runs need a user of their own
	if err := (&sandbox.Sandbox{}).Probe(au); err != nil {
		t.Skip(err)
	}
	if err := netns.Probe(netns.Options{}); err != nil {
		t.Skip(err)
	}
	for _, branches := range []bool{false, true} {
		t.Run(map[bool]string{false: "checkout", true: "worktree"}[branches], func(t *testing.T) {
			srv := newHitServer(t)
			w := newWorktreeEnv(t, Config{Sandbox: &sandbox.Sandbox{}}, au)
			gotFile := filepath.Join(w.workspaces, ".home", w.u.Key(), "hook-got")
			plant := srv.plant("pre-commit") + "; " + srv.plant("post-checkout") + "; echo x > f.txt; echo planted"
			ev := w.message("m1", plant, branches)
			if ev.Status != contract.StatusOK || !ev.Approval || !strings.HasPrefix(ev.Text, "planted") {
				t.Fatalf("planting run: %q approval %t %q", ev.Status, ev.Approval, ev.Text)
			}
			ev = w.answer("a1", contract.ActionApprove)
			if ev.Status != contract.StatusOK {
				t.Fatalf("approve: %q %q", ev.Status, ev.Text)
			}
			want := []string{"ran pre-commit"}
			if branches {
				// The runner's own git makes the next message's worktree.
				if ev := w.message("m2", "echo second", true); ev.Status != contract.StatusOK {
					t.Fatalf("second message: %q %q", ev.Status, ev.Text)
				}
				want = append(want, "ran post-checkout")
			}
			got, _ := os.ReadFile(gotFile)
			t.Logf("what the hooks got:\n%s", got)
			for _, s := range want {
				if !strings.Contains(string(got), s) {
					t.Errorf("hook-got %q; want %q: the hook did not run, so this test proves nothing", got, s)
				}
			}
			if hits := srv.got(); len(hits) > 0 {
				t.Errorf("the host's server was reached from the runner's git by the agent's hooks: %v", hits)
			}
			if strings.Contains(string(got), "host-secret") {
				t.Errorf("a hook read the host's server: %q", got)
			}
		})
	}
}
