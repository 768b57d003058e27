package agent

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// stderrEnd quotes the end of a program's stderr for an error.
func stderrEnd(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) > stderrTail {
		b = b[len(b)-stderrTail:]
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	if len(b) == 0 {
		return "no stderr"
	}
	return strings.ToValidUTF8(string(b), "?")
}

// lineWriter splits what is written to it into lines (without the
// newline) for line; a line longer than max is dropped.
type lineWriter struct {
	max  int
	line func([]byte)

	buf  []byte
	skip bool // the current line went past max
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !w.skip {
			if len(w.buf)+len(part) > w.max {
				w.skip, w.buf = true, nil
			} else {
				w.buf = append(w.buf, part...)
			}
		}
		if i < 0 {
			break
		}
		w.end()
		p = p[i+1:]
	}
	return n, nil
}

// flush hands over a last line that had no newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.end()
	}
}

func (w *lineWriter) end() {
	if !w.skip && len(w.buf) > 0 {
		w.line(w.buf)
	}
	w.skip = false
	if cap(w.buf) > 1<<20 {
		w.buf = nil // don't hold on to one huge line's memory
	} else {
		w.buf = w.buf[:0]
	}
}
