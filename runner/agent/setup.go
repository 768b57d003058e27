package agent

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"

	"github.com/textslash/textslash/contract"
)

// Shell exit codes of a program that could not be run: found but not
// executable (126), not found (127).
const (
	exitNotExecutable = 126
	exitNotFound      = 127
)

// reasonRunes is the longest reason a SetupError gives.
const reasonRunes = 200

// setupExit is the SetupError of a program that exited with code,
// having written stderr, when the code says it could not run what it was
// asked to (a shell's 126 or 127); else nil. The reason is stderr's last
// line: the shell's, said just before it gave up.
func setupExit(code int, stderr []byte) *SetupError {
	if code != exitNotExecutable && code != exitNotFound {
		return nil
	}
	return &SetupError{Reason: lastLine(stderr)}
}

// setupStart is the SetupError of a program cmd could not start because
// of itself (not found, not executable); else nil. A working directory
// that is missing is the runner's trouble, not the set-up's.
func setupStart(cmd *exec.Cmd, err error) *SetupError {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrPermission) {
		return &SetupError{Reason: contract.CutRunes(err.Error(), reasonRunes), Err: err}
	}
	if _, serr := os.Stat(cmd.Path); errors.Is(err, fs.ErrNotExist) && serr != nil {
		return &SetupError{Reason: contract.CutRunes(err.Error(), reasonRunes), Err: err}
	}
	return nil
}

// lastLine is b's last line that is not blank, cut to reasonRunes.
func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(strings.ToValidUTF8(string(bytes.ReplaceAll(b, []byte("\r"), []byte("\n"))), "?")), "\n")
	line := strings.TrimSpace(lines[len(lines)-1])
	if line == "" {
		return "no stderr"
	}
	return contract.CutRunes(line, reasonRunes)
}

// Program is the program c's line starts with, when that can be told
// before it runs: its first word, when the word is plain (no quotes,
// expansions, assignments or other shell syntax) and not a relative path
// (which runs in the person's workspace). "" when it cannot be told.
func (c Command) Program() string {
	fields := strings.Fields(c.Line)
	if len(fields) == 0 {
		return ""
	}
	word := fields[0]
	if strings.ContainsAny(word, "'\"$`\\=(){}[]*?~!<>|&;#") {
		return ""
	}
	if strings.Contains(word, "/") && !strings.HasPrefix(word, "/") {
		return ""
	}
	return word
}
