package egress

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// sentWaiter matches delivery reports to the messages waiting for them.
type sentWaiter struct {
	timeout time.Duration
	mu      sync.Mutex
	waiting map[string]chan delivery // by provider id
	early   map[string]early         // reports that came before their waiter
}

// delivery is the provider's final report on a message: its status and
// error code.
type delivery struct {
	status string
	code   int
}

type early struct {
	delivery
	at time.Time
}

func newSentWaiter(timeout time.Duration) *sentWaiter {
	return &sentWaiter{timeout: timeout, waiting: map[string]chan delivery{}, early: map[string]early{}}
}

// final reports whether a status ends the wait: the message left the
// provider, or never will.
func final(status string) bool {
	switch status {
	case "sent", "delivered", "read", "failed", "undelivered", "canceled":
		return true
	}
	return false
}

func (s *sentWaiter) expect(id string) <-chan delivery {
	c := make(chan delivery, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.early[id]; ok {
		delete(s.early, id)
		c <- e.delivery
		return c
	}
	s.waiting[id] = c
	return c
}

func (s *sentWaiter) report(id, status string, code int) {
	if !final(status) {
		return
	}
	d := delivery{status: status, code: code}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.waiting[id]; ok {
		delete(s.waiting, id)
		c <- d
		return
	}
	now := time.Now()
	if len(s.early) > 1000 {
		for k, e := range s.early {
			if now.Sub(e.at) > time.Minute {
				delete(s.early, k)
			}
		}
	}
	s.early[id] = early{delivery: d, at: now}
}

// await waits for the provider's report on message id and returns it,
// keeping msg in hand meanwhile; zero when none came in time, or ctx
// ended.
func (s *sentWaiter) await(ctx context.Context, log zerolog.Logger, msg jetstream.Msg, id string, c <-chan delivery) delivery {
	wait, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	d, err := keepAlive(wait, c, inProgress(msg))
	if err != nil && ctx.Err() == nil {
		s.mu.Lock()
		delete(s.waiting, id)
		s.mu.Unlock()
		log.Warn().Str("provider_id", id).Dur("waited_ms", s.timeout).Msg("no status callback in time; sending on (is PUBLIC_URL reachable by Twilio?)")
	}
	return d
}

// failed reports whether the provider could not deliver the message.
func (d delivery) failed() bool { return d.status == "failed" || d.status == "undelivered" }
