package discord

import (
	"testing"
	"time"

	"github.com/textslash/textslash/channel"
)

// ShortBackoff makes publishing's waits milliseconds for the test.
func ShortBackoff(t *testing.T) {
	old := publishing
	publishing = backoff{first: time.Millisecond, max: 5 * time.Millisecond, within: old.within}
	t.Cleanup(func() { publishing = old })
}

// UseHost gives d its Host as Run does, for tests that send without
// running the channel.
func UseHost(d *Discord, h channel.Host) { d.host = h }
