package egress

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Retry bounds the tries of a send that failed for a reason that may pass.
type Retry struct {
	Attempts int           // tries in all; default 6
	Base     time.Duration // first delay, doubled each time, with jitter; default 1s
	Max      time.Duration // longest delay; default 30s
}

// withDefaults is r with the bounds it leaves zero set to their
// defaults.
func (r Retry) withDefaults() Retry {
	if r.Attempts == 0 {
		r.Attempts = 6
	}
	if r.Base == 0 {
		r.Base = time.Second
	}
	if r.Max == 0 {
		r.Max = 30 * time.Second
	}
	return r
}

// validate refuses the bounds (defaulted) that are wrong; path is r's
// in Config ("Twilio.Retry").
func (r Retry) validate(path string) []error {
	return []error{notNegative(path+".Attempts", r.Attempts), notNegative(path+".Base", r.Base), notNegative(path+".Max", r.Max)}
}

// delay before try n+1: exponential with full jitter in its upper half.
func (r Retry) delay(n int) time.Duration {
	d := r.Base << min(n-1, 20)
	if d > r.Max || d <= 0 {
		d = r.Max
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d, keeping msg in hand meanwhile.
func sleep(ctx context.Context, msg jetstream.Msg, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	_, err := keepAlive(ctx, t.C, inProgress(msg))
	return err
}
