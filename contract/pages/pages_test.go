package pages

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// more is a footer on every page but the last.
func more(i, n int) string {
	if i == n {
		return ""
	}
	return fmt.Sprintf("\n\nReply MORE for the rest (page %d/%d)", i, n)
}

// footers are the footers the fuzz tests pick from; none but the last
// gets shorter as n grows.
var footers = []func(i, n int) string{
	more,
	func(i, n int) string { // egress's
		if i == n {
			return fmt.Sprintf("\n\n(page %d/%d)", i, n)
		}
		return fmt.Sprintf("\n\nReply MORE for the rest (page %d/%d)", i, n)
	},
	func(i, n int) string { return "" },
	func(i, n int) string { return fmt.Sprintf(" %d/%d", i, n) },
	func(i, n int) string { return fmt.Sprintf("\n👉%d/%d", i, n) },
	// Last: a footer longer on the last page, which may not settle.
	func(i, n int) string {
		if i == n {
			return "\n\n(end of the reply)"
		}
		return fmt.Sprintf(" %d/%d", i, n)
	},
}

func TestLength(t *testing.T) {
	for s, want := range map[string]int{
		"": 0, "abc": 3, "é": 1, "e\u0301": 2, "👍": 2, "👍🏽": 4, "👨‍👩‍👧‍👦": 11,
		"🇫🇷": 4, "日本": 2, "\xff": 1, "\xe2\x82": 2,
	} {
		if got := Length(s); got != want {
			t.Errorf("Length(%q) = %d; want %d", s, got, want)
		}
	}
}

// prose is n characters of ASCII prose in paragraphs.
func prose(n int) string {
	words := strings.Fields("the agent ran all tests and found two failures in the parser which it fixed by checking the length first then it ran them again")
	r := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		switch x := r.IntN(100); {
		case x < 2:
			b.WriteString(".\n\n")
		case x < 5:
			b.WriteString(".\n")
		case x < 12:
			b.WriteString(". ")
		default:
			b.WriteString(" ")
		}
	}
	return strings.TrimSpace(b.String()[:n-1]) + "."
}

func TestSplit(t *testing.T) {
	ten := strings.Repeat("word ", 3000)
	tests := []struct {
		name   string
		text   string
		limit  int
		footer func(i, n int) string
		want   int // pages
	}{
		{"empty", "", 1600, more, 1},
		{"fits", "hello", 1600, more, 1},
		{"exactly the limit", strings.Repeat("x", 1600), 1600, more, 1},
		{"one over, no spaces", strings.Repeat("x", 1601), 1600, more, 2},
		{"one over, words", strings.Repeat("abcd ", 320) + "x", 1600, more, 2},
		{"only whitespace", strings.Repeat(" \n", 1000), 1600, more, 1},
		{"fits but for whitespace", "\n\n  hello  \n" + strings.Repeat(" ", 2000), 1600, more, 1},
		{"prose", prose(4000), 1600, more, 3},
		{"emoji", strings.Repeat("👍🏽👨‍👩‍👧‍👦🇫🇷 ", 200), 1600, more, 3}, // 20 characters each
		{"CJK", strings.Repeat("日本語の文章です。", 400), 1600, more, 3},
		{"combining", strings.Repeat("e\u0301\u0302", 1000), 1600, more, 2},
		{"ten pages and more", ten, 1600, more, 10},
		{"footer grows at 10", ten, 1545, more, 10},
		{"footer grows at 10, 11 pages", ten, 1400, more, 11},
		{"a hundred pages", strings.Repeat("word ", 4000), 200, footers[3], 106},
		{"one letter, 3000 accents", "e" + strings.Repeat("\u0301", 3000), 1600, more, 2},
		{"tiny limit", "👍🏽 a b", 2, footers[2], 4},
		{"CRLF", strings.Repeat("line\r\n", 300), 1000, more, 2},
		{"invalid UTF-8", strings.Repeat("\xff\xfe ab", 400), 1600, more, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split(tt.text, tt.limit, tt.footer)
			if err != nil {
				t.Fatalf("got error %v; want none", err)
			}
			if len(got) != tt.want {
				t.Errorf("got %d pages; want %d", len(got), tt.want)
			}
			check(t, tt.text, tt.limit, tt.footer, got)
		})
	}
}

// TestSplitProse cuts 4,000 characters of prose for SMS: 3 pages, no word
// cut.
func TestSplitProse(t *testing.T) {
	text := prose(4000)
	got, err := Split(text, 1600, more)
	if err != nil {
		t.Fatal(err)
	}
	check(t, text, 1600, more, got)
	if len(got) != 3 {
		t.Fatalf("got %d pages; want 3", len(got))
	}
	for i, p := range got {
		body := strings.TrimSuffix(p, more(i+1, 3))
		at := strings.Index(text, body)
		if before := text[:at]; before != "" && !strings.HasSuffix(before, " ") && !strings.HasSuffix(before, "\n") {
			t.Errorf("page %d starts mid-word: %q", i+1, short(text[at-10:at+len(body)]))
		}
		if after := text[at+len(body):]; after != "" && after[0] != ' ' && after[0] != '\n' {
			t.Errorf("page %d ends mid-word: %q", i+1, short(text[at:at+len(body)+10]))
		}
	}
}

func TestSplitFits(t *testing.T) {
	for _, text := range []string{"", " ", strings.Repeat("x", 1600), strings.Repeat("👍", 800)} {
		got, err := Split(text, 1600, more)
		if err != nil || len(got) != 1 || got[0] != text {
			t.Errorf("Split(%d characters) = %d pages, %v; want the text as it is", Length(text), len(got), err)
		}
	}
	text := "  hello\n" + strings.Repeat("\n", 2000)
	if got, err := Split(text, 1600, more); err != nil || len(got) != 1 || got[0] != "hello" {
		t.Errorf("got %q, %v; want [\"hello\"]", got, err)
	}
	if got, err := Split(strings.Repeat(" ", 2000), 1600, more); err != nil || len(got) != 1 || got[0] != "" {
		t.Errorf("only spaces: got %q, %v; want one empty page", got, err)
	}
}

func TestSplitBreaks(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	words := func(n int) string { return strings.Repeat("ab ", n/3) } // n characters
	tests := []struct {
		name  string
		text  string
		first string // the first page without its footer
	}{
		// The limit is 1000, the footer 36: 964 for the first page, its
		// last fifth from 772.
		{"paragraph in the last fifth", a(800) + "\n\n" + words(150) + "\nb " + words(600), a(800)},
		{"line over paragraph before the last fifth", a(700) + "\n\n" + a(200) + "\n" + words(600), a(700) + "\n\n" + a(200)},
		{"paragraph of spaces and CRLF", a(800) + " \r\n \r\n" + words(600), a(800)},
		{"space in the second half", a(500) + " " + a(1000), a(500)},
		{"no space in the second half", a(400) + " " + a(1000), a(400) + " " + a(563)},
		{"a break right at the end", a(964) + " " + a(100), a(964)},
		{"whitespace at the end", a(900) + strings.Repeat(" ", 200) + "b", a(900)},
		{"no-break spaces", a(800) + "\u00a0" + a(50) + "\u202f!\u2007" + a(50) + " " + a(600), a(800) + "\u00a0" + a(50) + "\u202f!\u2007" + a(50)},
		{"tab and ideographic space", a(800) + "\t" + a(50) + "\u3000" + a(600), a(800) + "\t" + a(50)},
		{"words", strings.Repeat("word ", 300), strings.TrimSpace(strings.Repeat("word ", 193))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split(tt.text, 1000, more)
			if err != nil {
				t.Fatal(err)
			}
			check(t, tt.text, 1000, more, got)
			if first := strings.TrimSuffix(got[0], more(1, len(got))); first != tt.first {
				t.Errorf("first page is %q; want %q", short(first), short(tt.first))
			}
		})
	}
}

// short abbreviates long strings in messages.
func short(s string) string {
	if len(s) < 60 {
		return s
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", s[:20], len(s), s[len(s)-20:])
}

// TestSplitClusters moves each kind of cluster across every place a page
// could end, and checks none is cut.
func TestSplitClusters(t *testing.T) {
	for _, c := range []string{"👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "日", "e\u0301\u0302\u0303", "\u0915\u094d\u0937", "#\ufe0f\u20e3", "\r\n", "\u0600x"} {
		for shift := range 3 * Length(c) {
			text := strings.Repeat("a", shift) + strings.Repeat(c, 200/Length(c)+2)
			for _, limit := range []int{20, 37, 60} {
				got, err := Split(text, limit, footers[3])
				if err != nil {
					t.Fatalf("%q shifted %d, limit %d: %v", c, shift, limit, err)
				}
				check(t, text, limit, footers[3], got)
			}
		}
	}
}

func TestSplitErrors(t *testing.T) {
	if _, err := Split(strings.Repeat("x", 40), 37, more); !errors.Is(err, ErrLimit) {
		t.Errorf("footer of 36, limit 37: got error %v; want ErrLimit", err)
	}
	if _, err := Split(strings.Repeat("x", 40), 38, more); err != nil {
		t.Errorf("footer of 36, limit 38: got error %v; want none", err)
	}
	long := func(i, n int) string { return strings.Repeat("-", 60*(i/n)) } // on the last page
	if _, err := Split(strings.Repeat("x", 100), 50, long); !errors.Is(err, ErrLimit) {
		t.Errorf("last footer of 60, limit 50: got error %v; want ErrLimit", err)
	}
	if _, err := Split("abc", 0, footers[2]); !errors.Is(err, ErrLimit) {
		t.Errorf("limit 0: got error %v; want ErrLimit", err)
	}
	// 50 characters of footer with an even page count: 150 characters
	// take 3 pages then, 2 pages otherwise.
	flip := func(i, n int) string { return strings.Repeat("-", 50*(1-n%2)) }
	if _, err := Split(strings.Repeat("x", 150), 100, flip); !errors.Is(err, ErrUnsettled) {
		t.Errorf("got error %v; want ErrUnsettled", err)
	}
}

func TestTruncate(t *testing.T) {
	const suffix = "\n\n[Response truncated]" // 22 characters
	tests := []struct {
		name   string
		text   string
		limit  int
		suffix string
		want   string
	}{
		{"fits", "short", 1500, suffix, "short"},
		{"exactly the limit", strings.Repeat("x", 50), 50, suffix, strings.Repeat("x", 50)},
		{"one over", strings.Repeat("x", 51), 50, suffix, strings.Repeat("x", 28) + suffix},
		{"at a word", "one two three four five six seven eight nine ten eleven", 50, suffix, "one two three four five six" + suffix},
		{"emoji", strings.Repeat("👍🏽", 20), 50, suffix, strings.Repeat("👍🏽", 7) + suffix},
		{"flag", strings.Repeat("🇫🇷", 20), 50, "…", strings.Repeat("🇫🇷", 12) + "…"},
		{"fits but for whitespace", " hi " + strings.Repeat("\n", 100), 50, suffix, "hi"},
		{"only whitespace", strings.Repeat(" ", 100), 50, suffix, ""},
		{"no room for the suffix", "abcdef", 5, suffix, "abcde"},
		{"no room for an emoji", "👍abc", 1, "", ""},
		{"no suffix", strings.Repeat("ab ", 30), 10, "", "ab ab ab"},
		{"invalid UTF-8", strings.Repeat("\xff", 60), 50, "…", strings.Repeat("\xff", 49) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.text, tt.limit, tt.suffix)
			if got != tt.want {
				t.Errorf("got %q; want %q", short(got), short(tt.want))
			}
			if Length(got) > tt.limit {
				t.Errorf("got %d characters; want at most %d", Length(got), tt.limit)
			}
		})
	}
}

// check asserts what every Split must hold: pages within the limit, with
// their footers, holding the text in order but for whitespace at the
// cuts, not empty, and cut between grapheme clusters unless one cluster
// is wider than a page.
func check(t *testing.T, text string, limit int, footer func(i, n int) string, got []string) {
	t.Helper()
	if len(got) == 0 {
		t.Fatal("no pages")
	}
	if len(got) == 1 && Length(text) <= limit {
		if got[0] != text {
			t.Fatalf("text within the limit came back as %q", short(got[0]))
		}
		return
	}
	valid := utf8.ValidString(text)
	n := len(got)
	pos, prevBudget := 0, 0
	for i, p := range got {
		if l := Length(p); l > limit {
			t.Fatalf("page %d/%d: %d characters; want at most %d", i+1, n, l, limit)
		}
		body, budget := p, limit
		if n > 1 {
			f := footer(i+1, n)
			if !strings.HasSuffix(p, f) {
				t.Fatalf("page %d/%d ends %q; want footer %q", i+1, n, short(p), f)
			}
			body, budget = p[:len(p)-len(f)], limit-Length(f)
		}
		if valid && !utf8.ValidString(p) {
			t.Fatalf("page %d/%d is not UTF-8: %q", i+1, n, short(p))
		}
		if body == "" {
			if n == 1 && strings.TrimFunc(text, isBreak) == "" {
				return
			}
			t.Fatalf("page %d/%d is empty", i+1, n)
		}
		at := strings.Index(text[pos:], body)
		if at < 0 {
			t.Fatalf("page %d/%d %q is not in the text from byte %d", i+1, n, short(body), pos)
		}
		if gap := text[pos : pos+at]; strings.TrimFunc(gap, isBreak) != "" {
			t.Fatalf("page %d/%d leaves out %q", i+1, n, short(gap))
		}
		from, to := pos+at, pos+at+len(body)
		if valid {
			// Only a cluster wider than a page may be cut, by the page
			// that ends inside it.
			if c, inside := clusterAt(text, from); inside && (at > 0 || Length(c) <= prevBudget) {
				t.Fatalf("page %d/%d starts inside %q", i+1, n, c)
			}
			if c, inside := clusterAt(text, to); inside && Length(c) <= budget {
				t.Fatalf("page %d/%d (%d characters of text) ends inside %q", i+1, n, budget, c)
			}
			first, _, _, _ := uniseg.FirstGraphemeClusterInString(body, -1)
			last := lastCluster(body)
			if strings.TrimFunc(first, isBreak) == "" || strings.TrimFunc(last, isBreak) == "" {
				t.Fatalf("page %d/%d %q starts or ends with whitespace", i+1, n, short(body))
			}
		}
		pos, prevBudget = to, budget
	}
	if rest := text[pos:]; strings.TrimFunc(rest, isBreak) != "" {
		t.Fatalf("pages leave out %q", short(rest))
	}
}

// isBreak reports whether a line may break at r, a space but not a
// no-break space.
func isBreak(r rune) bool {
	return unicode.IsSpace(r) && r != '\u00a0' && r != '\u2007' && r != '\u202f'
}

// clusterAt finds the grapheme cluster at byte off of text, and whether
// off is inside it rather than at its start.
func clusterAt(text string, off int) (string, bool) {
	g := uniseg.NewGraphemes(text)
	for g.Next() {
		from, to := g.Positions()
		if off < to {
			return g.Str(), off > from
		}
	}
	return "", false
}

func lastCluster(s string) string {
	var last string
	for state := -1; s != ""; {
		last, s, _, state = uniseg.FirstGraphemeClusterInString(s, state)
	}
	return last
}

func FuzzSplit(f *testing.F) {
	f.Add("hello world", 60, uint8(0))
	f.Add(prose(300), 80, uint8(1))
	f.Add(strings.Repeat("👨‍👩‍👧‍👦 a ", 30), 20, uint8(3))
	f.Add("e"+strings.Repeat("\u0301", 100), 50, uint8(0))
	f.Add("\xff\xfe"+strings.Repeat("x", 200), 60, uint8(4))
	f.Add(strings.Repeat("🇫🇷", 30)+"\n\n"+strings.Repeat("日本語 ", 20), 40, uint8(2))
	f.Add(" \r\n \t\n\n\u00a0x\u0600 \u0301", 5, uint8(2))
	f.Fuzz(func(t *testing.T, text string, limit int, kind uint8) {
		limit = max(limit%300, -limit%300) // 0 to 299
		k := int(kind) % len(footers)
		footer := footers[k]
		got, err := Split(text, limit, footer)
		if errors.Is(err, ErrUnsettled) && k == len(footers)-1 {
			return
		}
		if err != nil {
			// The longest footer there can be: no more pages than bytes.
			n := len(text) + 1
			longest := max(Length(footer(n, n)), Length(footer(n, n+1)))
			if !errors.Is(err, ErrLimit) || limit >= longest+2 {
				t.Fatalf("limit %d, footer up to %d: got error %v", limit, longest, err)
			}
			return
		}
		check(t, text, limit, footer, got)
	})
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello world", 5, "…")
	f.Add(strings.Repeat("👍🏽 ", 100), 30, "\n\n[Response truncated]")
	f.Add("\xff\xfe"+strings.Repeat("x", 200), 40, "")
	f.Add("e"+strings.Repeat("\u0301", 100), 50, "…")
	f.Fuzz(func(t *testing.T, text string, limit int, suffix string) {
		limit = max(limit%300, -limit%300)
		got := Truncate(text, limit, suffix)
		if l := Length(got); l > limit {
			t.Fatalf("%d characters; want at most %d", l, limit)
		}
		if Length(text) <= limit {
			if got != text {
				t.Fatalf("text within the limit came back as %q", got)
			}
			return
		}
		if utf8.ValidString(text) && utf8.ValidString(suffix) && !utf8.ValidString(got) {
			t.Fatalf("not UTF-8: %q", got)
		}
		body, ok := strings.CutSuffix(got, suffix)
		if !ok || limit-Length(suffix) < 2 {
			body = got
		}
		trimmed := strings.TrimLeftFunc(text, isBreak)
		if !strings.HasPrefix(text, body) && !strings.HasPrefix(trimmed, body) {
			t.Fatalf("%q is not the start of the text", body)
		}
		if body != "" && utf8.ValidString(text) && limit-Length(suffix) >= 2 {
			from := strings.Index(text, body)
			if c, inside := clusterAt(text, from+len(body)); inside && Length(c) <= limit-Length(suffix) {
				t.Fatalf("cuts cluster %q", c)
			}
		}
	})
}

// BenchmarkSplit cuts a 64 KB reply for SMS.
func BenchmarkSplit(b *testing.B) {
	for _, bm := range []struct{ name, text string }{
		{"ASCII", prose(64 << 10)},
		{"emoji", strings.Repeat("A line of a long reply, with some words 👍🏽 and more words.\n", 1100)},
		{"CJK", strings.Repeat("日本語の文章です。", 64<<10/27)},
		{"one cluster", "e" + strings.Repeat("\u0301", 32<<10)},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(int64(len(bm.text)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Split(bm.text, 1600, footers[1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func ExampleSplit() {
	footer := func(i, n int) string {
		if i == n {
			return ""
		}
		return fmt.Sprintf(" (%d/%d, MORE)", i, n)
	}
	ps, _ := Split("Done. I fixed the parser 👍🏽\n\nAll 42 tests pass.", 42, footer)
	for _, p := range ps {
		fmt.Printf("%q\n", p)
	}
	// Output:
	// "Done. I fixed the parser 👍🏽 (1/2, MORE)"
	// "All 42 tests pass."
}
