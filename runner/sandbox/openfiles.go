package sandbox

import (
	"os"

	"golang.org/x/sys/unix"
)

// homeFiles is how many files a home holds open in this process: as root
// a pidfd of its first process (whose namespaces programs enter by path,
// checked against it: enter.go) and, with a network of its own,
// slirp4netns's two pipes (its exit pipe and its output) and the
// namespace's file (TestHomeFiles counts them; without root the
// namespaces' files too). Its bubblewrap and slirp4netns are reaped
// without a pidfd of Go's (runner/child), and its holder's stdin is a
// pipe only the holder holds. Each file is paid by every program this
// process starts: its fork copies them, its exec closes them (with 6,000
// open, a start of `true` costs about 1 CPU-ms more, runner/child's
// BenchmarkSpawnAmongFiles; a runner with a thousand homes spent a
// quarter of its CPU there when a home held fifteen). Homes are bounded by the open-file limit with it: a home past
// it failed to start ("pipe2: too many open files"), and the person got
// an error where they wanted an answer, while memory had room for
// thousands more.
func homeFiles() int {
	if os.Geteuid() == 0 {
		return 5
	}
	return 17 // its namespaces' seven files too, and the helper that makes sockets in its network
}

// fileRoom is how many homes the open-file limit leaves room for: the
// soft limit (which Go raises to the hard one at start), less the files
// open now and a quarter of it (at least 128) for everything else the
// process opens (runs' pipes, NATS, HTTP connections), over homeFiles.
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
	return int(max(1, left/int64(homeFiles())))
}
