package egress

import (
	"context"
	"sync"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// typingLongest bounds a typing indicator whose run's end never comes
// (its runner died and nobody reported it yet).
const typingLongest = 30 * time.Minute

// typing keeps one typing indicator per person while their run works: from
// its start (or an answer to its question) until its end (or a question,
// which waits for the person).
type typing struct {
	log zerolog.Logger

	mu   sync.Mutex
	runs map[string]context.CancelFunc // by user key
}

// note starts or stops u's indicator for ev.
func (t *typing) note(ctx context.Context, ch outlet, ev contract.Event) {
	typer, ok := ch.sender.(channel.Typer)
	if !ok || ch.rules.TypingEvery <= 0 {
		return
	}
	key := ev.User.Key()
	t.mu.Lock()
	defer t.mu.Unlock()
	if stop := t.runs[key]; stop != nil {
		stop()
		delete(t.runs, key)
	}
	switch ev.Kind {
	case contract.KindStarted, contract.KindAnswer:
	default:
		return
	}
	if time.Since(ev.At) > typingLongest {
		return // an old event read again: that run is long over
	}
	if t.runs == nil {
		t.runs = map[string]context.CancelFunc{}
	}
	ctx, stop := context.WithTimeout(ctx, typingLongest)
	t.runs[key] = stop
	go func() {
		defer stop()
		tick := time.NewTicker(ch.rules.TypingEvery)
		defer tick.Stop()
		for {
			if err := typer.Typing(ctx, ev.User, ev.JobID); err != nil && ctx.Err() == nil {
				t.log.Debug().Err(err).Str("user", key).Msg("typing indicator")
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}
