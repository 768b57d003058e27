package discord

import (
	"testing"
	"time"

	"github.com/textslash/textslash/kit"
)

// ShortBackoff makes publishing's waits milliseconds for the test.
func ShortBackoff(t *testing.T) {
	old := publishing
	publishing = backoff{first: time.Millisecond, max: 5 * time.Millisecond, within: old.within}
	t.Cleanup(func() { publishing = old })
}

// UseKit gives d the kit as Run does, for tests that send without
// running the channel.
func UseKit(d *Discord, k kit.Host) { d.k = k }
