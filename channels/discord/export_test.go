package discord

import (
	"context"
	"errors"
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

// AnsweredIn is where the person is answered about no job now: the
// conversation they last wrote in, "" when none (no direct conversation is
// opened). The channel notes it once their message is stored.
func AnsweredIn(d *Discord, person string) string {
	c, _ := d.places.Conversation(context.Background(), person, "", func(context.Context) (string, error) {
		return "", errors.New("no direct conversation opened in a test's look")
	})
	return c
}
