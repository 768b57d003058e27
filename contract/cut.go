// Cutting text short, the one home of it: an event's text to what NATS
// carries (CutText), an output to a size in bytes (CutBytes), a line to a
// number of characters (CutRunes), a text to its first line (FirstLine).
// A reply cut to a channel's limit, counted in UTF-16 code units and cut
// between grapheme clusters, is contract/pages (Split, Truncate).

package contract

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxEventText is the most text an event carries, in bytes. NATS refuses
// a message over its max_payload (1 MB by default), and JSON may write a
// byte of text as six ("<" is \u003c): 128 KB of any text fits. On a phone
// it is 80 pages of WhatsApp's 1,600 characters.
const MaxEventText = 128_000

// CutText returns text if it fits in MaxEventText, else its start — cut at
// a line's end when one is near, never inside a character — and a note
// saying how much there was.
func CutText(text string) string {
	if len(text) <= MaxEventText {
		return text
	}
	note := fmt.Sprintf("\n\n[Reply cut: the agent wrote %s; here are the first %s.]", size(len(text)), size(MaxEventText))
	keep := CutBytes(text, MaxEventText-len(note))
	if nl := strings.LastIndexByte(keep, '\n'); nl > len(keep)-2000 {
		keep = keep[:nl]
	}
	return keep + note
}

// CutBytes shortens s to at most n bytes, never inside a character, and
// adds nothing: the start of an agent's output kept within a size.
func CutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// size is n bytes as a person reads it: 3.0 MB, 128 KB, 900 bytes.
func size(n int) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1_000:
		return fmt.Sprintf("%d KB", n/1000)
	}
	return fmt.Sprintf("%d bytes", n)
}

// CutRunes shortens s to at most n runes, ending in … when cut: a line
// of a progress event, a caption, a question.
func CutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i = range s {
		if count == n-1 {
			break
		}
		count++
	}
	return s[:i] + "…"
}

// FirstLine is s's first non-blank line, trimmed.
func FirstLine(s string) string {
	for line := range strings.Lines(strings.ReplaceAll(s, "\r", "\n")) {
		if t := strings.TrimSpace(line); t != "" {
			return t
		}
	}
	return ""
}
