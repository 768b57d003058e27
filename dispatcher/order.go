// A person's messages routed in IN's order across crashes. Consume hands
// one person's messages to one handler in stream order, but only within
// one process: a message delivered to a dispatcher that died before
// acknowledging it stays pending until its ack wait ends, and the
// dispatcher that takes over meanwhile gets the person's next message
// first. So a message looks in IN for the person's messages still there
// before it, and routes them first, in order; and the person's state keeps
// the IN sequence of their last message routed (UserState.InSeq): one
// below it comes again after it was routed, and apply drops it.

package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// routeEarlier routes, in order, u's messages on subject (their IN
// subject) still in IN before seq. IN keeps only what is not acknowledged,
// so there is at most a handful, and mostly none: one look finds that.
//
// Those below the state's InSeq were routed already, and apply drops
// them. The one at InSeq is routed again: a dispatcher may have died after
// storing its state and before carrying out its effects (a job's publish),
// and routing it again repeats them (each is idempotent, as on any
// redelivery). Those this dispatcher itself routed to the end are skipped
// without a look: their acknowledgements may not have been taken in yet.
func (d *Dispatcher) routeEarlier(ctx context.Context, u contract.User, subject string, seq uint64) error {
	from := uint64(1)
	if done, ok := d.routed.get(u); ok {
		from = done + 1
	}
	for from < seq {
		m, err := d.in.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("earlier messages of %s: %w", u.Key(), err)
		}
		if m.Sequence >= seq {
			return nil
		}
		from = m.Sequence + 1
		ctx, log := bus.Traced(ctx, d.log.With().Str("subject", m.Subject).Logger(), m.Header)
		var in contract.Inbound
		if err := contract.Decode(m.Data, &in); err != nil {
			// Its own delivery terminates it.
			log.Warn().Err(err).Uint64("in_seq", m.Sequence).Msg("earlier message unreadable; skipped")
			continue
		}
		if d.own(log.WithContext(ctx), m.Subject, in) != nil {
			continue // its own delivery terminates it
		}
		log.Info().Str("user", u.Key()).Str("job_id", in.ID).Uint64("in_seq", m.Sequence).Uint64("before_seq", seq).
			Msg("routing an earlier message first: it is still in IN (a dispatcher stopped with it in hand)")
		if err := d.route(log.WithContext(ctx), in, m.Sequence); bus.IsPermanent(err) {
			// It can never be routed (a use when the person's projects
			// were written by a newer contract): its own delivery
			// terminates it. Returned, the error would terminate this
			// later message too, which would then never be routed.
			log.Warn().Err(err).Str("user", u.Key()).Str("job_id", in.ID).Uint64("in_seq", m.Sequence).
				Msg("earlier message can never be routed; skipped")
			continue
		} else if err != nil {
			return fmt.Errorf("earlier message %d: %w", m.Sequence, err)
		}
		d.routed.note(u, m.Sequence)
	}
	return nil
}

// routed is the IN sequence of each person's last message this dispatcher
// routed to the end, effects and all.
type routed struct {
	mu   sync.Mutex
	seqs map[string]uint64
}

func (r *routed) get(u contract.User) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.seqs[u.Key()]
	return seq, ok
}

// note remembers that u's message at seq was routed to the end. The
// memory is bounded as known's is.
func (r *routed) note(u contract.User, seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seqs == nil || len(r.seqs) >= knownMax {
		r.seqs = map[string]uint64{}
	}
	r.seqs[u.Key()] = max(r.seqs[u.Key()], seq)
}
