// Package pages cuts long replies to fit a channel's body limit: into pages
// for "more", or truncated. Cuts fall between grapheme clusters (never
// inside an emoji, a flag or a letter with its accents), preferably at a
// paragraph, line or word break.
package pages

import (
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// Length is how channels count characters: UTF-16 code units. Twilio's
// 1,600 and Telegram's 4,096 limits count this way; 👍 counts 2.
func Length(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// ErrLimit: the limit leaves no room for text beside the footer.
var ErrLimit = errors.New("pages: limit too small for the footer")

// Split cuts text into pages of at most limit characters (by Length), each
// ending with footer(i, n) for page i of n. Text within the limit is one
// page without a footer.
func Split(text string, limit int, footer func(i, n int) string) ([]string, error) {
	if Length(text) <= limit {
		return []string{text}, nil
	}
	cl := clusters(text)
	// The footers' length may depend on the page count ("page 10/10" is
	// longer than "page 9/9"): cut again until the count holds.
	n := 2
	for range 8 {
		budget := func(i int) int { return limit - Length(footer(i, n)) }
		bodies, err := cut(text, slices.Clone(cl), budget)
		if err != nil {
			return nil, err
		}
		if len(bodies) == 0 { // nothing but whitespace
			return []string{""}, nil
		}
		if len(bodies) == n {
			for i := range bodies {
				bodies[i] += footer(i+1, n)
			}
			return bodies, nil
		}
		n = len(bodies)
	}
	return nil, errors.New("pages: page count does not settle")
}

// Truncate cuts text so that it and suffix fit limit, and appends suffix.
// Text within the limit is returned as it is.
func Truncate(text string, limit int, suffix string) string {
	if Length(text) <= limit {
		return text
	}
	budget := limit - Length(suffix)
	if budget < 2 {
		return cutRunes(suffix, limit)
	}
	end, _ := page(text, clusters(text), 0, budget)
	return strings.TrimRightFunc(text[:end], unicode.IsSpace) + suffix
}

// cluster is a grapheme cluster: where it is in the text, its Length.
type cluster struct {
	start, end, width int
}

func clusters(s string) []cluster {
	var out []cluster
	state, pos := -1, 0
	for len(s) > 0 {
		var c string
		c, s, _, state = uniseg.FirstGraphemeClusterInString(s, state)
		pos += len(c)
		out = append(out, cluster{start: pos - len(c), end: pos, width: Length(c)})
	}
	return out
}

// cut makes pages (without footers) of at most budget(i) characters.
func cut(text string, cl []cluster, budget func(i int) int) ([]string, error) {
	var out []string
	k := 0 // the first cluster of the page
	for {
		// Whitespace at a break belongs to no page.
		for k < len(cl) && isSpace(text, cl[k]) {
			k++
		}
		if k == len(cl) {
			return out, nil
		}
		start := cl[k].start
		b := budget(len(out) + 1)
		if b < 2 {
			return nil, ErrLimit
		}
		end, next := page(text, cl, k, b)
		out = append(out, strings.TrimRightFunc(text[start:end], unicode.IsSpace))
		k = next
	}
}

// page finds the end of a page starting at cluster k: the byte offset
// where it ends and the index of the first cluster after it. It breaks at
// the latest paragraph, else line, else word break in the page's last
// 40%, else after the last cluster that fits; a cluster wider than the
// whole budget is cut between runes.
func page(text string, cl []cluster, k, budget int) (end, next int) {
	start := cl[k].start
	w, i := 0, k
	best := [3]int{-1, -1, -1} // cluster index after a paragraph, line, word break
	for i < len(cl) && w+cl[i].width <= budget {
		w += cl[i].width
		if w*5 >= budget*3 {
			c := text[cl[i].start:cl[i].end]
			switch {
			case c == "\n" && i > k && text[cl[i-1].start:cl[i-1].end] == "\n":
				best[0] = i + 1
			case c == "\n" || c == "\r\n":
				best[1] = i + 1
			case isSpace(text, cl[i]):
				best[2] = i + 1
			}
		}
		i++
	}
	if i == len(cl) {
		return len(text), i
	}
	if i == k { // one cluster wider than the page: cut it between runes
		piece := cutRunes(text[start:cl[k].end], budget)
		if piece == "" { // one rune wider than the page (budget 1)
			_, size := utf8.DecodeRuneInString(text[start:])
			piece = text[start : start+size]
		}
		// The rest of the cluster starts the next page.
		cl[k].start += len(piece)
		cl[k].width -= Length(piece)
		return cl[k].start, k
	}
	for _, b := range best {
		if b > 0 {
			return cl[b-1].end, b
		}
	}
	return cl[i-1].end, i
}

func isSpace(text string, c cluster) bool {
	return strings.TrimFunc(text[c.start:c.end], unicode.IsSpace) == ""
}

// cutRunes is the longest prefix of s, whole runes, of at most limit
// characters.
func cutRunes(s string, limit int) string {
	n := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > limit {
			return s[:i]
		}
		n += w
	}
	return s
}
