package sandbox

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEndMarkedHelper is the program TestEndMarkedKeepsTheProgram starts:
// a process with threads (the Go runtime's) that starts a tool and waits.
func TestEndMarkedHelper(t *testing.T) {
	if os.Getenv("TEXTSLASH_ENDMARKED_HELPER") != "1" {
		t.Skip("run by TestEndMarkedKeepsTheProgram")
	}
	tool := exec.Command("sleep", "60")
	if err := tool.Start(); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString(strconv.Itoa(tool.Process.Pid) + "\n")
	time.Sleep(60 * time.Second)
}

// EndMarked ends what a program kept running started (its tool), and not
// the program itself, whose threads /proc answers for by their ids too.
func TestEndMarkedKeepsTheProgram(t *testing.T) {
	dir := t.TempDir()
	command := CommandFunc(dir, filepath.Join(dir, "home"), nil, false, "TEXTSLASH_ENDMARKED_HELPER=1")
	cmd := command(t.Context(), os.Args[0], "-test.run=^TestEndMarkedHelper$")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { EndGroup(cmd); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper's tool: %v", err)
	}
	tool, _ := strconv.Atoi(strings.TrimSpace(line))
	threads, _ := os.ReadDir("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task")
	if len(threads) < 2 {
		t.Fatalf("the helper has %d threads; want several, for the test to mean something", len(threads))
	}

	EndMarked(cmd)
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(tool, 0) == nil && !zombie(tool); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the tool (pid %d) still runs after EndMarked", tool)
		}
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil || zombie(cmd.Process.Pid) {
		t.Errorf("the program (pid %d, %d threads) was ended too: %v", cmd.Process.Pid, len(threads), err)
	}
}

// zombie reports whether pid has exited, unreaped.
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) == 0 || f[0] == "Z"
}
