package egress_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/textslash/textslash/natstest"
)

// noMore checks that a fake got no more than n requests, and keeps
// getting none, for 300 ms: how to see that something did not happen
// (a sleep and one look passes falsely on a loaded machine). got lists
// the requests so far (their bodies, their methods), what names them.
func noMore(t *testing.T, n int, what string, got func() []string) {
	t.Helper()
	natstest.HoldsUntil(t, time.Now().Add(300*time.Millisecond), func() error {
		if g := got(); len(g) != n {
			return fmt.Errorf("%d %s %q; want %d", len(g), what, g, n)
		}
		return nil
	})
}
