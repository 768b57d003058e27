package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A second textslash on data another is using is refused at once, with
// the other's pid: two would write one JetStream store.
func TestSecondServeOnTheSameDataIsRefused(t *testing.T) {
	first := startServe(t, "TEXTSLASH_AGENT=shell")
	second := &instance{Data: first.Data, env: append(append([]string(nil), first.env...),
		"PORT="+freePort(t), "TEXTSLASH_NATS_LISTEN=127.0.0.1:"+freePort(t))}
	err := second.launch(t)
	if err == nil {
		t.Fatal("a second textslash serve on the same data started")
	}
	if code := second.cmd.ProcessState.ExitCode(); code == 0 {
		t.Errorf("the second textslash serve exited with 0; want a failure")
	}
	out, _ := os.ReadFile(second.Log)
	want := fmt.Sprintf("in use by another textslash (pid %d)", first.cmd.Process.Pid)
	if !bytes.Contains(out, []byte(want)) {
		t.Fatalf("the second's output does not say %q:\n%s", want, out)
	}
	if n := len(strings.Split(strings.TrimSpace(string(out)), "\n")); n != 1 {
		t.Errorf("the second's output is %d lines; want one:\n%s", n, out)
	}
}

// Ctrl-C with a web chat tab open (its event stream) stops textslash
// cleanly: exit status 0, no error logged.
func TestInterruptWithAnEventStreamOpenStopsCleanly(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := inst.newChat(t).events(ctx) // the stream is open once its headers came
	inst.signal(syscall.SIGINT)
	if code := inst.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d; want 0", code)
	}
	for _, line := range readLog(t, inst.Log) {
		if line.str("level") == "error" {
			t.Errorf("error logged while stopping: %v", line)
		}
	}
	for range events { // the stream ended with the process
	}
}

// A NATS port already taken ends textslash serve with the bind error,
// naming the port, as soon as the embedded server meets it.
func TestTakenNATSPortIsReported(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(os.Environ(), "TEXTSLASH_DATA="+t.TempDir(), "PORT="+freePort(t),
		"TEXTSLASH_NATS_LISTEN="+addr, "TEXTSLASH_LOG_FORMAT=json", "TEXTSLASH_AGENT=shell")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("textslash serve: %v; want it to exit with a failure:\n%s", err, out)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	last := string(lines[len(lines)-1])
	for _, want := range []string{addr, "address already in use", "TEXTSLASH_NATS_LISTEN"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last line does not say %q: %s", want, last)
		}
	}
}

// A preview port already taken (another textslash's, another program's)
// ends textslash serve with a plain last line naming the address and
// TEXTSLASH_PREVIEW_ADDR: with previews off instead, a tunnel or proxy
// set up to that port would reach the other program.
func TestTakenPreviewPortIsReported(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("previews need homes with a network of their own, which need root")
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve")
	cmd.Env = append(os.Environ(), "TEXTSLASH_DATA="+t.TempDir(), "PORT="+freePort(t),
		"TEXTSLASH_NATS_LISTEN=127.0.0.1:"+freePort(t), "TEXTSLASH_LOG_FORMAT=json", "TEXTSLASH_AGENT=shell",
		"TEXTSLASH_DISK_QUOTA=0", "TEXTSLASH_PREVIEW_ADDR="+addr)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("textslash serve still ran a minute after its start with the preview port taken:\n%s", tail(string(out), 3000))
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("textslash serve: %v; want it to exit with a failure:\n%s", err, out)
	}
	last := lastLine(string(out))
	for _, want := range []string{addr, "is taken", "TEXTSLASH_PREVIEW_ADDR"} {
		if !strings.Contains(last, want) {
			t.Errorf("the last line does not say %q: %s", want, last)
		}
	}
}
