package sandbox

import (
	"testing"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/textslash/textslash/runner/internal/testkit"
	"github.com/textslash/textslash/runner/sandbox/netns"
)

// homesOf are Homes as the runner keeps them: each home with a network of
// its own where this machine gives one.
func homesOf(t *testing.T) *Homes {
	hs := &Homes{Dir: t.TempDir()}
	if netns.Probe(netns.Options{}) == nil {
		hs.Network = &netns.Options{RefuseHost: true}
	}
	t.Cleanup(hs.Close)
	return hs
}

// A home holds at most homeFiles files open in this process, which the
// homes' bound by the open-file limit counts on.
func TestHomeFiles(t *testing.T) {
	box := homeBox(t)
	hs := homesOf(t)
	const n = 4
	before := testkit.OpenFiles(t)
	for range n {
		_, leave, err := hs.Enter(box, t.TempDir(), t.TempDir(), "", nil, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		leave()
	}
	per := float64(testkit.OpenFiles(t)-before) / n
	t.Logf("%.1f files open per home (network of its own: %t)", per, hs.Network != nil)
	if per > float64(homeFiles()) {
		t.Errorf("a home holds %.1f files open; homeFiles counts %d (network of its own: %t)", per, homeFiles(), hs.Network != nil)
	}
}

// Homes are bounded by the open-file limit, not only by memory: with room
// for a few homes' files, three times as many people each get a home,
// the least recently used let go. Before, homes past the limit failed to
// start ("pipe2: too many open files"): the person got an error.
func TestHomesBoundByOpenFiles(t *testing.T) {
	box := homeBox(t)
	var was unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &was); err != nil {
		t.Fatal(err)
	}
	// Room for about 8 homes' files beside the reserve of 128.
	low := was
	low.Cur = uint64(testkit.OpenFiles(t) + 128 + 8*homeFiles() + homeFiles()/2)
	if low.Cur > was.Cur {
		t.Skipf("the open-file limit is %d already", was.Cur)
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_NOFILE, &was) })
	hs := homesOf(t)
	bound := hs.FileBound()
	if bound < 2 || bound > 8 {
		t.Fatalf("FileBound with room for 8 homes: %d", bound)
	}
	for i := range 3 * bound {
		_, leave, err := hs.Enter(box, t.TempDir(), t.TempDir(), "", nil, zerolog.Nop())
		if err != nil {
			t.Fatalf("person %d of %d (limit %d files, FileBound %d): %v", i+1, 3*bound, low.Cur, bound, err)
		}
		leave()
	}
	if warm := hs.Stats().Warm; warm > bound {
		t.Errorf("%d homes kept; FileBound is %d", warm, bound)
	}
}
