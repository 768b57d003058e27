package snapshot

import (
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf16"

	"github.com/textslash/textslash/runner/session"
)

// claudeProjectDir is the directory Claude Code keeps the sessions of the
// working directory dir in, beneath ~/.claude/projects: dir with every
// UTF-16 code unit that is not an ASCII letter or digit made "-", cut at
// 200 with a hash of dir added when longer (Claude Code 2.1's KN(), the
// hash being Java's String.hashCode, absolute, in base 36). The CLI names
// its working directory with symlinks resolved.
func claudeProjectDir(dir string) string {
	units := utf16.Encode([]rune(dir))
	b := make([]byte, len(units))
	var h int32
	for i, c := range units {
		h = 31*h + int32(c)
		if c < 0x80 && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = byte(c)
		} else {
			b[i] = '-'
		}
	}
	if len(b) <= 200 {
		return string(b)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return string(b[:200]) + "-" + strconv.FormatInt(abs, 36)
}

// transcriptsOf is the directory of the sessions of s's workspace,
// beneath the home: named for the workspace as the agent sees it.
func transcriptsOf(s Source) string {
	dir := s.Seen
	if dir == "" {
		dir = s.Dir
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
	}
	return path.Join(".claude", "projects", claudeProjectDir(dir))
}

// listTranscripts lists the agent's session files of s's workspace in
// home; the root they are read from is returned to be closed.
func listTranscripts(home *os.Root, s Source) ([]*entry, *os.Root, error) {
	rel := transcriptsOf(s)
	if fi, err := home.Lstat(rel); err != nil || !fi.IsDir() {
		rel = path.Join(".claude", "projects", claudeProjectDir(s.Dir)) // as given, links unresolved
		if fi, err := home.Lstat(rel); err != nil || !fi.IsDir() {
			return nil, nil, nil
		}
	}
	sub, err := home.OpenRoot(rel)
	if err != nil {
		return nil, nil, err
	}
	es, err := walk(sub, ".", entryClaude)
	if err != nil {
		sub.Close()
		return nil, nil, err
	}
	return es, sub, nil
}

// readSessionID is the valid session id in home's file name, or "".
func readSessionID(home *os.Root, name string) string {
	if name == "" || !localPath(name) {
		return ""
	}
	f, err := home.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(f, 256))
	id := strings.TrimSpace(string(b))
	if !session.Valid(id) {
		return ""
	}
	return id
}
