// Package shottest finds the Chromium that tests of screenshots use.
package shottest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/textslash/textslash/natstest"
)

// Chromium is $TEXTSLASH_TEST_CHROMIUM, else the first browser textslash
// itself would pick: Debian's headless shell, chromium, chromium-browser or
// google-chrome. Without one the test is skipped, or fails when
// $CI is set (scripts/test installs Chromium).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TEXTSLASH_TEST_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			natstest.Missing(t, "TEXTSLASH_TEST_CHROMIUM: %v", err)
		}
		return p
	}
	for _, name := range []string{"/usr/lib/chromium/chromium-headless-shell", "chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	natstest.Missing(t, "no Chromium in PATH and TEXTSLASH_TEST_CHROMIUM empty")
	return ""
}
