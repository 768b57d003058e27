package egress

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/contract/pages"
)

// A held message's images whose links expired while it waited are left
// out, with a note first; the body still fits the channel.
func TestHeldImagesExpire(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	link := func(exp time.Time) string {
		return fmt.Sprintf("https://pub.example.com/images/a.jpeg?e=%d&s=sig", exp.Unix())
	}
	fresh, stale := link(now.Add(time.Minute)), link(now.Add(-time.Minute))
	note := fmt.Sprintf(msgImagesExpired, 1)
	for _, tt := range []struct {
		name      string
		hm        heldMsg
		wantBody  string
		wantMedia []string
	}{
		{"links still valid", heldMsg{Body: "shot", Media: []string{fresh}}, "shot", []string{fresh}},
		{"a link expired", heldMsg{Body: "shot", Media: []string{stale}}, note + "\n\nshot", nil},
		{"an image alone", heldMsg{Media: []string{stale}}, note, nil},
		{"not a signed link", heldMsg{Body: "x", Media: []string{"https://example.com/a.png"}}, "x", []string{"https://example.com/a.png"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := tt.hm.message(now, 1600)
			if m.Body != tt.wantBody || !slices.Equal(m.Media, tt.wantMedia) {
				t.Errorf("got %q with %q; want %q with %q", m.Body, m.Media, tt.wantBody, tt.wantMedia)
			}
		})
	}
	long := heldMsg{Body: strings.Repeat("a", 1600), Media: []string{stale}}
	if m := long.message(now, 1600); pages.Length(m.Body) > 1600 || !strings.HasPrefix(m.Body, note) {
		t.Errorf("a full page with the note: %d characters, starting %q; want at most 1600, the note first", pages.Length(m.Body), m.Body[:40])
	}
}
