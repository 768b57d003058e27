package discord

import (
	"testing"
	"time"
)

// ShortBackoff makes publishing's waits milliseconds for the test.
func ShortBackoff(t *testing.T) {
	old := publishing
	publishing = backoff{first: time.Millisecond, max: 5 * time.Millisecond, within: old.within}
	t.Cleanup(func() { publishing = old })
}
