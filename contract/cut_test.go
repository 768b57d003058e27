package contract_test

import (
	"testing"

	"github.com/textslash/textslash/contract"
)

// CutBytes keeps at most n bytes, fewer rather than half a character, and
// adds nothing.
func TestCutBytes(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"too long", 3, "too"},
		{"üüü", 4, "üü"}, // ü is 2 bytes
		{"üüü", 3, "ü"},
		{"👍x", 3, ""}, // 👍 is 4 bytes
		{"abc", 0, ""},
		{"", 3, ""},
	} {
		if got := contract.CutBytes(tc.s, tc.n); got != tc.want {
			t.Errorf("CutBytes(%q, %d) = %q; want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
