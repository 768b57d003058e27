package claudetest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExplore(t *testing.T) {
	turns := []Turn{ToolUse("Bash", map[string]string{"command": "echo hi > hello.txt", "description": "write a file"}), Text("All done")}
	var web *httptest.Server
	switch os.Getenv("SCENARIO") {
	case "tools":
		web = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<html><body><h1>Hello page</h1><p>some text</p></body></html>"))
		}))
		defer web.Close()
		turns = []Turn{
			ToolUse("Write", map[string]string{"file_path": "a.txt", "content": "one\n"}),
			ToolUse("Read", map[string]string{"file_path": "a.txt"}),
			ToolUse("Edit", map[string]string{"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
			ToolUse("Grep", map[string]string{"pattern": "two"}),
			ToolUse("Glob", map[string]string{"pattern": "*.txt"}),
			ToolUse("WebFetch", map[string]string{"url": web.URL + "/page", "prompt": "what is the heading"}),
			ToolUse("TodoWrite", map[string]any{"todos": []map[string]string{{"content": "x", "status": "pending", "activeForm": "xing"}}}),
			Text("done"),
		}
	case "task":
		turns = []Turn{ToolUse("Task", map[string]string{"description": "look around", "prompt": "list files", "subagent_type": "general-purpose"}), Text("sub done"), Text("main done")}
	case "e400":
		turns = []Turn{APIError(400, "bad things")}
	case "e500":
		turns = []Turn{APIError(500, "server exploded")}
	case "e401":
		turns = []Turn{APIError(401, "invalid x-api-key")}
	}
	m := NewModel(t, turns...)
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	os.Chmod(filepath.Dir(dir), 0o755)
	home := dir + "/home"
	ws := dir + "/ws"
	os.Mkdir(home, 0o777)
	os.Mkdir(ws, 0o777)
	u, _ := user.Lookup("textslash-agent")
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	os.Chown(home, uid, gid)
	os.Chown(ws, uid, gid)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(t), "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions")
	if a := os.Getenv("EXTRA"); a != "" {
		cmd.Args = append(cmd.Args, strings.Fields(a)...)
	}
	cmd.Dir = ws
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin", "CI=true"}
	if os.Getenv("EXPLORE_BARE") == "" {
		env = append(env, Env(m)...)
	} else {
		env = append(env, "ANTHROPIC_BASE_URL="+m.URL(), "ANTHROPIC_API_KEY=x")
	}
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	cmd.Stdin = stringsReader("please write hello")
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("took %v err=%v", time.Since(start), err)
	if ee, ok := err.(*exec.ExitError); ok {
		t.Logf("stderr: %s", ee.Stderr)
	}
	if os.Getenv("EXPLORE_OUT") != "" {
		t.Logf("stdout:\n%s", out)
	}
	for _, r := range m.Requests() {
		t.Logf("%s %s %v main=%v beta=%v", r.Method, r.Path, r.Query, r.Main, r.Header.Get("anthropic-beta"))
		if strings.Contains(string(r.Body), "hello-from-textslash") {
			t.Logf("body has appended prompt")
		}
		if !r.Main && len(r.Body) > 0 {
			b := r.Body
			if len(b) > 1500 {
				b = b[:1500]
			}
			t.Logf("body: %s", b)
		}
	}
	b, err := os.ReadFile(ws + "/hello.txt")
	t.Logf("hello.txt: %q %v", b, err)
}

func stringsReader(s string) *stringsR { return &stringsR{s: s} }

type stringsR struct{ s string }

func (r *stringsR) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p, r.s)
	r.s = r.s[n:]
	return n, nil
}
