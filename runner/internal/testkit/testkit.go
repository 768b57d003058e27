// Package testkit holds the helpers that the runner's tests in more than
// one package share (the runner's root, handover, sandbox, netns, disk
// and child): files an attack aims at, a small image to hand over, this
// test binary run again as another user, the files it holds open and its
// children's CPU. Only tests import it.
package testkit

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// VictimDir is a directory only root may enter, holding a file: what a
// workspace's links point at in the attacks of the tests. It skips the
// test unless it runs as root.
func VictimDir(t *testing.T) (dir, file string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the attacks need textslash running as root")
	}
	dir = t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "precious")
	if err := os.WriteFile(file, []byte("root's own\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

// PNG is a 4×3 grey PNG image.
func PNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// AsUser runs this test binary again as the OS user name, with args (a
// -test.run, say) and env added to this process's environment, from a
// copy that user may run, and returns what it printed. It skips the test
// unless it runs as root and the user exists.
func AsUser(t *testing.T, name string, env []string, args ...string) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run as another user")
	}
	u, err := user.Lookup(name)
	if err != nil {
		t.Skip(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, filepath.Base(os.Args[0]))
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp") // the user's own
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, uid, gid); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"HOME=" + tmp, "TMPDIR=" + tmp}, env...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// PassAs runs the tests named (top-level tests of this binary) again as
// the OS user name (AsUser), and fails t unless each of them passed there:
// one skipped there is a failure too.
func PassAs(t *testing.T, name string, tests ...string) {
	t.Helper()
	run := "^(" + strings.Join(tests, "|") + ")$"
	out, err := AsUser(t, name, nil, "-test.run="+run, "-test.v", "-test.count=1")
	t.Log(out)
	if err != nil {
		t.Fatalf("the tests as %s: %v", name, err)
	}
	for _, test := range tests {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + regexp.QuoteMeta(test) + ` `).MatchString(out) {
			t.Errorf("%s as %s did not pass", test, name)
		}
	}
}

// OpenFiles is how many files this process has open.
func OpenFiles(t testing.TB) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// ChildCPU is the CPU of this process's children reaped so far.
func ChildCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
