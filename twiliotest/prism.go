package twiliotest

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
)

// messagesSpec is Twilio's OpenAPI description (twilio-oai, API v2010)
// reduced to POST /2010-04-01/Accounts/{AccountSid}/Messages.json and the
// schemas it uses.
//
//go:embed testdata/messages-openapi.strict.json
var messagesSpec []byte

// StartPrism runs Stoplight Prism as a mock of Twilio's Messages create
// operation, validating requests against Twilio's OpenAPI description, and
// returns its base URL, "http://127.0.0.1:PORT" (for RedirectClient). A valid
// create, form-encoded with basic auth, gets 201 and an example Message; an
// invalid one 422 with Prism's list of violations; one without basic auth
// 401. Prism is stopped when the test ends.
//
// The binary is $TEXTSLASH_TEST_PRISM_BIN, else .bin/prism in the
// node_modules NodeSign uses. The test is skipped when it is missing, or
// fails when $CI is set. Prism takes about a second to start.
func StartPrism(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("TEXTSLASH_TEST_PRISM_BIN")
	if bin == "" {
		bin = filepath.Join(nodeModules(t), ".bin", "prism")
	}
	fi, err := os.Stat(bin)
	if err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
		err = errors.New("not an executable file")
	}
	if err != nil {
		natstest.Missing(t, "prism %s: %v", bin, err)
	}
	spec := filepath.Join(t.TempDir(), "messages-openapi.json")
	if err := os.WriteFile(spec, messagesSpec, 0o644); err != nil {
		t.Fatalf("twiliotest: write prism spec: %v", err)
	}
	// Another process may take the port between the check and prism's
	// listen; prism then exits and another port is tried.
	var errs []error
	for range 3 {
		base, err := startPrism(t, bin, spec, freePort(t))
		if err == nil {
			return base
		}
		errs = append(errs, err)
	}
	t.Fatalf("twiliotest: start prism: %v", errors.Join(errs...))
	return ""
}

// prismTimeout bounds prism's start; it usually takes a second.
const prismTimeout = 60 * time.Second

func startPrism(t testing.TB, bin, spec string, port int) (string, error) {
	t.Helper()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "mock", spec, "-h", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		cancel()
		return "", err
	}
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		cancel()
		<-exited
		_ = syscall.Kill(-pgid, syscall.SIGKILL) // anything left in the group
	}

	for !isPrism(base) {
		if time.Since(start) > prismTimeout {
			stop()
			return "", fmt.Errorf("prism on port %d not ready in %s\n%s", port, prismTimeout, out)
		}
		select {
		case <-exited:
			stop()
			return "", fmt.Errorf("prism on port %d exited: %v\n%s", port, waitErr, out)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("twiliotest: prism on %s ready in %s", base, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("twiliotest: prism output:\n%s", out)
		}
	})
	return base, nil
}

// isPrism reports whether a Prism server answers at base: it answers an
// unknown path with an error naming itself.
func isPrism(base string) bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(base + "/twiliotest-ready")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return strings.Contains(string(b), "prism")
}

// freePort picks a free loopback port in 30000–31999 (other tests use
// 20000–29999).
func freePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := 30000 + rand.IntN(2000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			l.Close()
			return port
		}
	}
	t.Fatal("twiliotest: no free port in 30000-31999")
	return 0
}

// syncBuffer is a bytes.Buffer safe for a process's output and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
