package pages

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

func footer(i, n int) string {
	if i == n {
		return fmt.Sprintf("\n\n(page %d/%d)", i, n)
	}
	return fmt.Sprintf("\n\nReply MORE for the rest (page %d/%d)", i, n)
}

func TestLength(t *testing.T) {
	for s, want := range map[string]int{"": 0, "abc": 3, "é": 1, "e\u0301": 2, "👍": 2, "👍🏽": 4, "日本": 2, "\xff": 1} {
		if got := Length(s); got != want {
			t.Errorf("Length(%q) = %d; want %d", s, got, want)
		}
	}
}

func TestSplit(t *testing.T) {
	prose := strings.Repeat("All work and no play makes Jack a dull boy. ", 91)
	tests := []struct {
		name  string
		text  string
		limit int
		pages int
	}{
		{"fits", "hello", 1600, 1},
		{"exactly the limit", strings.Repeat("x", 1600), 1600, 1},
		{"one over", strings.Repeat("x", 1601), 1600, 2},
		{"prose", prose, 1600, 3},
		{"emoji", strings.Repeat("👨‍👩‍👧‍👦", 300), 1600, 3}, // 11 characters each
		{"flags", strings.Repeat("🇫🇷", 1000), 1600, 3},
		{"combining", strings.Repeat("e\u0301\u0302", 1000), 1600, 2},
		{"ten pages and more", strings.Repeat("word ", 3500), 1600, 12},
		{"only spaces", strings.Repeat(" ", 2000), 1600, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split(tt.text, tt.limit, footer)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.pages {
				t.Fatalf("%d pages; want %d", len(got), tt.pages)
			}
			check(t, tt.text, got, tt.limit, footer)
		})
	}
	t.Run("breaks between words", func(t *testing.T) {
		got, _ := Split(prose, 1600, footer)
		for i, p := range got[:len(got)-1] {
			body := p[:strings.LastIndex(p, "\n\n")]
			if !strings.HasSuffix(body, ".") && !strings.HasSuffix(body, "y") && !strings.HasSuffix(body, "k") {
				if strings.HasSuffix(body, " ") || !strings.Contains(prose, body+" ") {
					t.Errorf("page %d ends mid-word: %q", i+1, body[len(body)-20:])
				}
			}
		}
	})
	t.Run("prefers a paragraph break", func(t *testing.T) {
		text := strings.Repeat("a", 1200) + "\n\n" + strings.Repeat("b c ", 200)
		got, _ := Split(text, 1600, footer)
		if body := got[0][:strings.LastIndex(got[0], "\n\n")]; body != strings.Repeat("a", 1200) {
			t.Errorf("first page is %d characters; want the first paragraph", len(body))
		}
	})
	t.Run("limit too small", func(t *testing.T) {
		if _, err := Split(strings.Repeat("x", 100), 20, footer); err == nil {
			t.Error("no error for a limit smaller than the footer")
		}
	})
}

func TestTruncate(t *testing.T) {
	const suffix = "\n\n[Response truncated]"
	if got := Truncate("short", 1500, suffix); got != "short" {
		t.Errorf("got %q", got)
	}
	text := strings.Repeat("👍🏽 word ", 400)
	got := Truncate(text, 1500, suffix)
	if Length(got) > 1500 || !strings.HasSuffix(got, suffix) || !utf8.ValidString(got) {
		t.Fatalf("%d characters, ends %q", Length(got), got[len(got)-30:])
	}
	if body := strings.TrimSuffix(got, suffix); !strings.HasPrefix(text, body) || !(strings.HasSuffix(body, " word") || strings.HasSuffix(body, "word 👍🏽")) {
		t.Errorf("cut mid-word or mid-emoji: %q", body[len(body)-20:])
	}
}

// check asserts what every split must hold.
func check(t *testing.T, text string, got []string, limit int, footer func(i, n int) string) {
	t.Helper()
	var joined strings.Builder
	for i, p := range got {
		if n := Length(p); n > limit {
			t.Fatalf("page %d: %d characters over %d", i+1, n, limit)
		}
		body := p
		if len(got) > 1 {
			f := footer(i+1, len(got))
			if !strings.HasSuffix(p, f) {
				t.Fatalf("page %d lacks its footer %q", i+1, f)
			}
			body = strings.TrimSuffix(p, f)
		}
		if utf8.ValidString(text) {
			if !utf8.ValidString(body) {
				t.Fatalf("page %d is not valid UTF-8", i+1)
			}
			if strings.TrimSpace(body) == "" && strings.TrimSpace(text) != "" {
				t.Fatalf("page %d is empty", i+1)
			}
		}
		joined.WriteString(body)
	}
	if strip(joined.String()) != strip(text) {
		t.Fatalf("pages do not add up to the text")
	}
	if !utf8.ValidString(text) {
		return
	}
	// No page boundary inside a grapheme cluster, unless a cluster alone is
	// wider than a page.
	bounds := map[int]bool{0: true}
	g := uniseg.NewGraphemes(text)
	wide := false
	for g.Next() {
		from, to := g.Positions()
		bounds[to] = true
		if Length(text[from:to]) > limit/2 {
			wide = true
		}
	}
	if wide {
		return
	}
	pos := 0
	for i, p := range got {
		body := p
		if len(got) > 1 {
			body = strings.TrimSuffix(p, footer(i+1, len(got)))
		}
		at := strings.Index(text[pos:], body)
		if at < 0 {
			t.Fatalf("page %d is not a piece of the text", i+1)
		}
		if !bounds[pos+at] || !bounds[pos+at+len(body)] {
			t.Fatalf("page %d starts or ends inside a grapheme cluster", i+1)
		}
		pos += at + len(body)
	}
}

func strip(s string) string { return strings.Join(strings.Fields(s), "") }

func FuzzSplit(f *testing.F) {
	f.Add("hello world", 60)
	f.Add(strings.Repeat("👨‍👩‍👧‍👦 a ", 100), 60)
	f.Add(strings.Repeat("e\u0301\u0302", 100), 70)
	f.Add("\xff\xfe"+strings.Repeat("x", 200), 60)
	f.Add(strings.Repeat("🇫🇷", 100)+"\n\n"+strings.Repeat("日本語 ", 50), 80)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 60 || limit > 2000 {
			t.Skip()
		}
		got, err := Split(text, limit, footer)
		if err != nil {
			t.Fatal(err)
		}
		check(t, text, got, limit, footer)
	})
}

func FuzzTruncate(f *testing.F) {
	f.Add("hello world", 5)
	f.Add(strings.Repeat("👍🏽 ", 100), 30)
	f.Add("\xff\xfe"+strings.Repeat("x", 200), 40)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		if limit < 25 || limit > 2000 {
			t.Skip()
		}
		const suffix = "\n\n[Response truncated]"
		got := Truncate(text, limit, suffix)
		if Length(got) > limit {
			t.Fatalf("%d characters over %d", Length(got), limit)
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatal("invalid UTF-8")
		}
		if got != text && !strings.HasPrefix(text, strings.TrimSuffix(got, suffix)) {
			t.Fatal("not a prefix of the text")
		}
	})
}

func BenchmarkSplit(b *testing.B) {
	text := strings.Repeat("A line of a long reply, with some words 👍🏽 and more words.\n", 1100) // ~64 KB
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Split(text, 1600, footer); err != nil {
			b.Fatal(err)
		}
	}
}
