package sandbox

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// stderrTail is how much of a program's stderr StderrEnd quotes.
const stderrTail = 500

// StderrEnd quotes the end of a program's stderr for an error.
func StderrEnd(b []byte) string {
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

// LineWriter splits what is written to it into lines (without the
// newline) for Line; a line longer than Max is dropped.
type LineWriter struct {
	Max  int
	Line func([]byte)

	buf  []byte
	skip bool // the current line went past max
}

func (w *LineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !w.skip {
			if len(w.buf)+len(part) > w.Max {
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

// Flush hands over a last line that had no newline.
func (w *LineWriter) Flush() {
	if len(w.buf) > 0 {
		w.end()
	}
}

func (w *LineWriter) end() {
	if !w.skip && len(w.buf) > 0 {
		w.Line(w.buf)
	}
	w.skip = false
	if cap(w.buf) > 1<<20 {
		w.buf = nil // don't hold on to one huge line's memory
	} else {
		w.buf = w.buf[:0]
	}
}
