package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// HomeFiles is how many files a home holds open in this process: its
// namespaces (six), its holder's pipes and pidfd, and, with a network of
// its own, slirp4netns's pipes, pidfd and API socket (TestHomeFiles
// counts them). Homes are bounded by the open-file limit with it: a home
// past it failed to start ("pipe2: too many open files"), and the person
// got an error where they wanted an answer, while memory had room for
// thousands more.
const HomeFiles = 16

// fileRoom is how many homes the open-file limit leaves room for: the
// soft limit (which Go raises to the hard one at start), less the files
// open now and a quarter of it (at least 128) for everything else the
// process opens (runs' pipes, NATS, HTTP connections), over HomeFiles.
func fileRoom() int {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == unix.RLIM_INFINITY {
		return 1 << 20
	}
	open := 0
	if entries, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(entries)
	}
	left := int64(lim.Cur) - int64(open) - max(128, int64(lim.Cur)/4)
	return int(max(1, left/HomeFiles))
}
