package egress

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// typer counts typing calls.
type typer struct {
	channel.Sender
	mu    sync.Mutex
	calls int
}

func (f *typer) Typing(context.Context, contract.User, string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return nil
}

func (f *typer) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// The indicator shows from a run's start, again every TypingEvery, stops
// while a question waits for the person, resumes with the answer and ends
// with the run.
func TestTypingFollowsTheRun(t *testing.T) {
	f := &typer{}
	ch := outlet{sender: f, rules: channel.Rules{TypingEvery: 20 * time.Millisecond}}
	ty := typing{log: zerolog.Nop()}
	u := contract.User{Channel: contract.ChannelTelegram, ID: "1"}
	ev := func(kind contract.EventKind) contract.Event {
		return contract.Event{Kind: kind, User: u, JobID: "j1", At: time.Now()}
	}
	stopped := func() {
		t.Helper()
		n := f.n()
		natstest.HoldsUntil(t, time.Now().Add(100*time.Millisecond), func() error {
			if f.n() != n {
				return fmt.Errorf("typing went on: %d calls, then %d", n, f.n())
			}
			return nil
		})
	}
	ty.note(t.Context(), ch, ev(contract.KindStarted))
	natstest.CheckFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		if f.n() < 3 {
			return errTooFew
		}
		return nil
	})
	ty.note(t.Context(), ch, ev(contract.KindQuestion))
	stopped()
	before := f.n()
	ty.note(t.Context(), ch, ev(contract.KindAnswer))
	natstest.CheckFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		if f.n() <= before {
			return errTooFew
		}
		return nil
	})
	ty.note(t.Context(), ch, ev(contract.KindDone))
	stopped()

	old := ev(contract.KindStarted)
	old.At = time.Now().Add(-time.Hour)
	ty.note(t.Context(), ch, old)
	stopped()
}

var errTooFew = errors.New("too few typing calls")
