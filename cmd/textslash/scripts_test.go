package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo puts a go first on PATH that logs each call's arguments to the
// returned file, one line each, and answers as script says (bash, given
// the arguments as "$@").
func fakeGo(t *testing.T, script string) (path, calls string) {
	t.Helper()
	bin := t.TempDir()
	calls = filepath.Join(bin, "calls")
	body := "#!/usr/bin/env bash\necho \"$*\" >> " + calls + "\n" + script + "\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin + ":" + os.Getenv("PATH"), calls
}

func readCalls(t *testing.T, calls string) []string {
	t.Helper()
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// scripts/dev shows how far the first build is, and starts textslash
// without building the nats CLI first (scripts/nats builds it when used).
func TestDevShowsProgressAndBuildsNoNATSCLI(t *testing.T) {
	root := t.TempDir() // a checkout of scripts/dev alone: it builds into bin/
	if err := os.MkdirAll(filepath.Join(root, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	dev, err := os.ReadFile("../../scripts/dev")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "scripts", "dev"), dev, 0o755); err != nil {
		t.Fatal(err)
	}
	// go lists and "compiles" 250 packages; the textslash it builds says
	// how it was started.
	path, calls := fakeGo(t, `
case "$1" in
  env) echo go1.26.0 ;;
  list) for i in $(seq 250); do echo "example/p$i"; done ;;
  build)
    while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
    if [ -n "${out:-}" ]; then printf '#!/bin/sh\necho "textslash $*"\n' > "$out"; chmod +x "$out"; fi
    for i in $(seq 250); do echo "example/p$i" >&2; done ;;
esac`)
	cmd := exec.Command(filepath.Join(root, "scripts", "dev"), "--flag")
	cmd.Env = append(os.Environ(), "PATH="+path, "TEXTSLASH_SANDBOX=off", "TEXTSLASH_AGENT_USER=nobody")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/dev: %v\n%s", err, out)
	}
	for _, want := range []string{"compiled 100 of 250 packages", "compiled 200 of 250 packages", "textslash serve --flag"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("scripts/dev's output does not say %q:\n%s", want, out)
		}
	}
	for _, call := range readCalls(t, calls) {
		if strings.Contains(call, "natscli") {
			t.Errorf("scripts/dev ran go %s before textslash started", call)
		}
	}
}

// scripts/test narrowed with flags runs go test alone: no vet, gofmt or
// build of the whole tree first.
func TestScriptsTestNarrowedOnlyTests(t *testing.T) {
	if os.Getenv("TEXTSLASH_TEST_CLAUDE_BIN") == "" {
		t.Skip("scripts/setup has not run here: scripts/test would install what the tests need")
	}
	path, calls := fakeGo(t, `
case "$*" in
  list*'/...'*) echo "$PWD/contract/..." ;;
  list*) echo "$PWD/contract" ;;
esac`)
	cmd := exec.Command("../../scripts/test", "-run", "TestSomething")
	cmd.Env = append(os.Environ(), "PATH="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/test: %v\n%s", err, out)
	}
	var tested bool
	for _, call := range readCalls(t, calls) {
		verb, _, _ := strings.Cut(call, " ")
		switch verb {
		case "test":
			tested = strings.Contains(call, "-run TestSomething")
		case "vet", "build":
			t.Errorf("scripts/test -run TestSomething ran go %s", call)
		}
	}
	if !tested {
		t.Errorf("scripts/test -run TestSomething did not run go test -run TestSomething: %q", readCalls(t, calls))
	}
}
