// Package output keeps what programs write: the end of a stderr quoted
// in an error (StderrEnd), a stream split into lines (LineWriter), and a
// buffer that keeps the first bytes and counts the rest (CappedBuffer).
package output

import (
	"bytes"
	"io"
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

// CappedBuffer keeps the first Max bytes written to it and counts the rest.
type CappedBuffer struct {
	buf       bytes.Buffer
	Max       int
	truncated bool
}

func (b *CappedBuffer) Write(p []byte) (int, error) {
	if room := b.Max - b.buf.Len(); room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Bytes are the bytes kept.
func (b *CappedBuffer) Bytes() []byte { return b.buf.Bytes() }

// String is the bytes kept, as text.
func (b *CappedBuffer) String() string { return b.buf.String() }

// Len is how many bytes are kept.
func (b *CappedBuffer) Len() int { return b.buf.Len() }

// Truncated reports whether more than Max bytes were written.
func (b *CappedBuffer) Truncated() bool { return b.truncated }

// ReadFrom reads r into the buffer directly: io.Copy, and os/exec's copy
// of a program's output with it, would otherwise take a 32 KB buffer for
// each program.
func (b *CappedBuffer) ReadFrom(r io.Reader) (int64, error) {
	n, err := b.buf.ReadFrom(io.LimitReader(r, int64(max(b.Max-b.buf.Len(), 0))))
	if err != nil {
		return n, err
	}
	rest, err := io.Copy(io.Discard, r) // io.Discard reads into a shared buffer
	if rest > 0 {
		b.truncated = true
	}
	return n + rest, err
}
