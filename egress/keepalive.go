package egress

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// keepAliveEvery is how often egress tells JetStream that events it holds
// are still in hand: well within contract.EgressAckWait, so that none is
// redelivered while egress waits (a retry's delay, a status callback, an
// earlier message of the same person).
const keepAliveEvery = contract.EgressAckWait / 3

// keepAlive waits for a value from ready, or for ctx to end (its error),
// calling touch every keepAliveEvery meanwhile: touch keeps the events
// waited for in hand.
func keepAlive[T any](ctx context.Context, ready <-chan T, touch func()) (T, error) {
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	for {
		select {
		case v := <-ready:
			return v, nil
		case <-tick.C:
			touch()
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// inProgress is keepAlive's touch for one event: msg is in hand.
func inProgress(msg jetstream.Msg) func() {
	return func() { _ = msg.InProgress() }
}
