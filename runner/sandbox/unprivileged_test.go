package sandbox

import (
	"os"
	"testing"

	"github.com/textslash/textslash/runner/internal/testkit"
)

// unprivilegedTests are the tests of homes and run networks that hold for
// a runner that is not root as for one that is.
var unprivilegedTests = []string{
	"TestHomeKeptAndRunsEnd", "TestHomesLetGo", "TestHomeOwnNetwork",
	"TestRunNet", "TestRunNetClosed", "TestHomeBackgroundOutlivesRuns", "TestHomeFiles",
}

// A runner that is not root keeps homes as root does: the tests above,
// run again as nobody, pass rather than skip. Before, ProbeHomes refused
// ("textslash is not root") and every run had a sandbox of its own, on
// the host's network.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the tests as nobody")
	}
	homeBox(t)
	if fi, err := os.Stat("/dev/net/tun"); err != nil || fi.Mode().Perm()&0o006 != 0o006 {
		t.Skipf("/dev/net/tun is not 0666 as on Debian (source scripts/setup): %v", err)
	}
	testkit.PassAs(t, "nobody", unprivilegedTests...)
}
