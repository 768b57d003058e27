package egress

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// sleep waits d, keeping msg in hand meanwhile.
func sleep(ctx context.Context, msg jetstream.Msg, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	_, err := keepAlive(ctx, t.C, inProgress(msg))
	return err
}
