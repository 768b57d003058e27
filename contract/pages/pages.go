// Package pages cuts long replies to fit a channel's body limit: into pages
// read one after another ("Reply MORE"), or truncated. It is the part of
// contract's text cutting (contract/cut.go: an event's text, bytes, runes,
// a first line) that counts as channels do, in UTF-16 code units, and
// cuts between grapheme clusters; egress pages and truncates with it.
//
// Cuts fall between grapheme clusters (Unicode UAX #29), so never inside an
// emoji sequence, a flag or a letter with its accents, and preferably at a
// paragraph, line or word break. The whitespace at a cut is dropped.
package pages

import (
	"unicode"

	"github.com/rivo/uniseg"
)

// Length is how channels count characters: UTF-16 code units. Twilio's
// 1,600 and Telegram's 4,096 limits count this way; 👍 counts 2. A byte
// that is not UTF-8 counts 1, as U+FFFD would.
func Length(s string) int {
	if len(s) == 1 { // most grapheme clusters
		return 1
	}
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// Split cuts text into pages of at most limit characters (by Length), each
// ending with footer(i, n) for page i of n (1 ≤ i ≤ n; the footer may be
// "", say for the last page). Footers may grow with n ("page 10/10" is
// longer than "page 9/9"): n is the final count.
//
// Text within the limit is one page as it is, without a footer; so is text
// within the limit once the whitespace around it is dropped (text of
// nothing but whitespace is one page "", never no pages). Otherwise each
// page ends, preferably, at the last paragraph break (a blank line) in its
// last fifth, else the last line break there, else the last space in its
// second half, else after the last grapheme cluster that fits. A cluster
// wider than a page (thousands of accents on one letter) is cut between
// runes. Pages never start or end with whitespace; a no-break space is not
// whitespace here.
//
// Split fails with ErrLimit if limit leaves fewer than 2 characters beside
// a footer, and with ErrUnsettled if no page count agrees with the footers
// (footers that get shorter as n grows can do that).
func Split(text string, limit int, footer func(i, n int) string) ([]string, error) {
	if Length(text) <= limit {
		return []string{text}, nil
	}
	t := segment(text)
	start := t.skipSpace(pos{})
	if start.c == len(t.ends) {
		return []string{""}, nil
	}
	if content := text[start.off:t.contentEnd()]; Length(content) <= limit {
		return []string{content}, nil
	}
	// Cut with room for the footers of n pages until that makes n pages.
	// With footers that do not get shorter as n grows, n only grows, and
	// settles in 2 or 3 tries.
	for n, tries := 2, 0; tries < 64; tries++ {
		bodies, err := t.cut(start, limit, n, footer)
		if err != nil {
			return nil, err
		}
		if len(bodies) != n {
			n = len(bodies)
			continue
		}
		for i := range bodies {
			bodies[i] += footer(i+1, n)
		}
		if within(bodies, limit) {
			return bodies, nil
		}
		n++ // the rest fitted page n only without its footer
	}
	return nil, ErrUnsettled
}

// Truncate cuts text so that it and suffix fit limit, where Split would
// end a page, and appends suffix. Text within the limit is returned as it
// is; so is text within the limit once the whitespace around it is
// dropped. If the suffix leaves fewer than 2 characters for text, it is
// left out (and under 2, text is cut between runes).
func Truncate(text string, limit int, suffix string) string {
	if Length(text) <= limit {
		return text
	}
	budget := limit - Length(suffix)
	if budget < 2 {
		suffix, budget = "", limit
	}
	if budget < 2 { // no room for an emoji: cut between runes
		return text[:fit(text, budget)]
	}
	t := segment(text)
	start := t.skipSpace(pos{})
	if start.c == len(t.ends) {
		return ""
	}
	if content := text[start.off:t.contentEnd()]; Length(content) <= limit {
		return content
	}
	end, _ := t.page(start, budget)
	return text[start.off:end] + suffix
}

// clusters is a text cut into grapheme clusters.
type clusters struct {
	s    string
	ends []int // the byte offset where each cluster ends
}

// pos is a place in a text: in cluster c, at byte off, the start of the
// cluster unless a cluster wider than a page was cut.
type pos struct{ c, off int }

// segment cuts s into grapheme clusters.
func segment(s string) *clusters {
	t := &clusters{s: s, ends: make([]int, 0, len(s))}
	for i, state := 0, -1; i < len(s); {
		var c string
		c, _, _, state = uniseg.FirstGraphemeClusterInString(s[i:], state)
		i += len(c)
		t.ends = append(t.ends, i)
	}
	return t
}

// cluster is the part of cluster c from byte off on.
func (t *clusters) cluster(c, off int) string { return t.s[off:t.ends[c]] }

// start is where cluster c starts.
func (t *clusters) start(c int) int {
	if c == 0 {
		return 0
	}
	return t.ends[c-1]
}

// space reports whether s is nothing but whitespace where a line may
// break: not a no-break space.
func space(s string) bool {
	if len(s) == 1 { // ASCII, or a byte that is not UTF-8
		c := s[0]
		return c == ' ' || '\t' <= c && c <= '\r'
	}
	for _, r := range s {
		if !unicode.IsSpace(r) || r == '\u00a0' || r == '\u2007' || r == '\u202f' {
			return false
		}
	}
	return true
}

// skipSpace is the first place from p on that is not whitespace.
func (t *clusters) skipSpace(p pos) pos {
	for p.c < len(t.ends) && space(t.cluster(p.c, p.off)) {
		p = pos{p.c + 1, t.ends[p.c]}
	}
	return p
}

// contentEnd is where the text ends but for whitespace.
func (t *clusters) contentEnd() int {
	c := len(t.ends)
	for c > 0 && space(t.cluster(c-1, t.start(c-1))) {
		c--
	}
	return t.start(c)
}

// cut makes the pages without footers from start on, with room for the
// footers of n pages: footer(i, n) on page i < n, then footer(n, n) on a
// page that holds the rest, and on one that does not (n is too small) a
// footer like footer(n-1, n).
func (t *clusters) cut(start pos, limit, n int, footer func(i, n int) string) ([]string, error) {
	var out []string
	last := limit - Length(footer(n, n))
	more := limit - Length(footer(max(n-1, 1), n))
	for p := start; p.c < len(t.ends); {
		i := len(out) + 1
		budget := more
		if i < n {
			budget = limit - Length(footer(i, n))
		} else if last < 2 {
			return nil, ErrLimit
		} else if end, next := t.page(p, last); next.c == len(t.ends) {
			out = append(out, t.s[p.off:end])
			break
		}
		if budget < 2 {
			return nil, ErrLimit
		}
		end, next := t.page(p, budget)
		out = append(out, t.s[p.off:end])
		p = t.skipSpace(next)
	}
	return out, nil
}

// page finds the end (in bytes) of the page of at most budget characters
// that starts at p, where no whitespace is, and where the text goes on:
// maybe whitespace, to skip. budget is at least 2.
func (t *clusters) page(p pos, budget int) (end int, next pos) {
	b := breaks{para: brk{-1, 0}, line: brk{-1, 0}, ws: brk{-1, 0}, run: brk{-1, 0}}
	c, inSpace := t.fill(p, budget, &b)
	if c == len(t.ends) { // the rest fits
		if inSpace {
			return t.start(b.run.c), pos{c, len(t.s)}
		}
		return len(t.s), pos{c, len(t.s)}
	}
	// Whether the clusters that fit end with whitespace.
	fitSpace := c-1 > p.c && space(t.cluster(c-1, t.start(c-1)))
	if inSpace { // cluster c is whitespace: read it all
		e := t.readSpace(c+1, &b)
		if e == len(t.ends) { // the rest is whitespace
			return t.start(b.run.c), pos{e, len(t.s)}
		}
		b.mark()
	}
	return t.cutAt(p, c, budget, b, fitSpace || inSpace)
}

// brk is a place a page may end: the cluster where its whitespace starts,
// and the width of the page if it ended there.
type brk struct{ c, w int }

// breaks are the latest breaks of each kind on a page being read.
type breaks struct {
	para, line, ws brk
	run            brk // the whitespace being read
	nl             int // its newlines
}

// mark notes the whitespace just read as a break of its kind.
func (b *breaks) mark() {
	switch {
	case b.nl >= 2:
		b.para = b.run
	case b.nl == 1:
		b.line = b.run
	}
	b.ws = b.run
}

// fill reads the clusters from p on that fit in budget, noting the breaks
// among them in b. It returns the first cluster that does not fit
// (len(t.ends): the rest fits) and whether the last cluster read, that
// one or else the text's last, is whitespace.
func (t *clusters) fill(p pos, budget int, b *breaks) (c int, inSpace bool) {
	w, from := 0, p.off
	for c = p.c; c < len(t.ends); c++ {
		s := t.s[from:t.ends[c]]
		sp := space(s)
		if sp {
			if !inSpace {
				b.run, b.nl = brk{c, w}, 0
			}
			if s[len(s)-1] == '\n' { // "\n" or "\r\n"
				b.nl++
			}
		} else if inSpace {
			b.mark()
		}
		inSpace = sp
		// No character (UTF-16 unit) takes more than 3 bytes: a long
		// cluster (a letter with thousands of accents) is not read to
		// its end on every page it is cut for.
		if len(s) > 3*(budget-w) {
			break
		}
		n := Length(s)
		if w+n > budget {
			break
		}
		w += n
		from = t.ends[c]
	}
	return c, inSpace
}

// readSpace reads the whitespace from cluster e on, counting its newlines
// in b, and returns the first cluster that is not whitespace
// (len(t.ends): none).
func (t *clusters) readSpace(e int, b *breaks) int {
	for ; e < len(t.ends); e++ {
		s := t.cluster(e, t.start(e))
		if !space(s) {
			break
		}
		if s[len(s)-1] == '\n' {
			b.nl++
		}
	}
	return e
}

// cutAt picks the end of the page that starts at p, cluster c the first
// that does not fit: the best of its breaks b, else after the clusters
// that fit, else inside cluster p.c. full: the page is full up to
// whitespace.
func (t *clusters) cutAt(p pos, c, budget int, b breaks, full bool) (end int, next pos) {
	last := budget - budget/5
	switch {
	case b.para.c >= 0 && b.para.w >= last:
		return t.at(b.para)
	case b.line.c >= 0 && b.line.w >= last:
		return t.at(b.line)
	case b.ws.c >= 0 && (b.ws.w >= budget/2 || full):
		return t.at(b.ws)
	case c > p.c:
		return t.ends[c-1], pos{c, t.ends[c-1]}
	}
	// Not even cluster p.c fits: cut it between runes.
	end = p.off + fit(t.cluster(p.c, p.off), budget)
	return end, pos{p.c, end}
}

// at is where a page ending at break b ends, and where the text goes on.
func (t *clusters) at(b brk) (int, pos) {
	off := t.start(b.c)
	return off, pos{b.c, off}
}

// within reports whether all pages are within limit.
func within(pages []string, limit int) bool {
	for _, p := range pages {
		if Length(p) > limit {
			return false
		}
	}
	return true
}

// fit is the length in bytes of the longest prefix of s, in whole runes,
// of at most limit characters.
func fit(s string, limit int) int {
	n := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if n+w > limit {
			return i
		}
		n += w
	}
	return len(s)
}
