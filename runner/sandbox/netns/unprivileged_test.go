package netns

import (
	"os"
	"testing"

	"github.com/textslash/textslash/runner/internal/testkit"
)

// unprivilegedTests are the tests that hold for a runner that is not
// root as for one that is: the home's network is reached through the
// helper (sockets.go) instead of setns.
var unprivilegedTests = []string{
	"TestHostLoopbackUnreachable", "TestOutboundToHostAddress", "TestRefuseHostAddresses",
	"TestOutboundUDP", "TestForward", "TestForwardRefusesOtherAddresses",
	"TestAttachRefusesHostNamespace", "TestDialReachesNamespaceLoopback", "TestProxy",
	"TestTwoHomesApart", "TestCloseLeavesNoSlirp",
}

// A runner that is not root networks homes as root does: the tests above,
// run again as nobody, pass rather than skip. Before, Probe refused
// without CAP_SYS_ADMIN and homes shared the host's network.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the tests as nobody")
	}
	needNamespaces(t)
	if fi, err := os.Stat(tunDevice); err != nil || fi.Mode().Perm()&0o006 != 0o006 {
		t.Skipf("%s is not 0666 as on Debian (source scripts/setup): %v", tunDevice, err)
	}
	testkit.PassAs(t, "nobody", unprivilegedTests...)
}
