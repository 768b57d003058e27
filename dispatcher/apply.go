// The apply loop: one input taken in, fed to the state machine with the
// person's state, and the new state stored by compare-and-set, again until
// no other dispatcher got there first; then its effects are carried out
// (effects.go).

package dispatcher

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// apply feeds one input to the user's state machine, stores the new state
// by compare-and-set, and carries out the effects. in is the inbound
// message behind the input, if any.
func (d *Dispatcher) apply(ctx context.Context, u contract.User, input fsm.Input, in *contract.Inbound) error {
	log := zerolog.Ctx(ctx).With().Str("user", u.Key()).Str("job_id", input.ID).Logger()
	input.Agent = d.agent()
	for {
		// The queue's head is looked at again on each pass: one an earlier
		// pass saw may be gone.
		input.QueueHead = ""
		st, rev, mem, err := d.load(ctx, u)
		if err != nil {
			return err
		}
		if input.InSeq != 0 && input.InSeq < st.InSeq {
			// Redelivered after a later message of the person's was routed
			// (order.go): it was routed before that one.
			log.Info().Uint64("in_seq", input.InSeq).Uint64("routed_seq", st.InSeq).Msg("message routed already; dropping the redelivery")
			return nil
		}
		if in != nil && slices.Contains(st.Finished, in.ID) {
			// Redelivered after its run ended (its acknowledgement was lost).
			log.Info().Msg("message already ran; dropping the redelivery")
			return nil
		}
		if in != nil && st.State == contract.StateWorking {
			if caught, err := d.catchUp(ctx, u, st); err != nil {
				return err
			} else if caught {
				continue
			}
		}
		if input.Kind == fsm.Keyword && input.Keyword == fsm.Cancel {
			input.Waiting = int(d.queueDepth(ctx, u)) // what it drops
		}
		var head *queued
		empty := false // the queue is empty at rev
		if needsHead(st, input) {
			// Only a done of the running job ends it; any other input that
			// looks at the queue while a job runs may repeat its start.
			keepCurrent := st.Running() && (input.Kind != fsm.Done || input.ID != st.JobID)
			if mem == nil || !mem.empty {
				if head, err = d.head(ctx, u, st, keepCurrent); err != nil {
					return err
				}
			}
			if head != nil {
				input.QueueHead = head.in.ID
			}
			empty = head == nil
		}
		next, effects := fsm.Step(st, input)
		next = bookkeep(st, next, input)
		switch {
		case changed(st, next):
			if rev, err = d.save(ctx, u, next, rev); conflict(err) {
				continue // another dispatcher changed this user: look again
			} else if err != nil {
				return err
			}
			if !next.WarmUntil.Equal(st.WarmUntil) {
				log.Debug().Time("warm_until", next.WarmUntil).Time("warm_until_was", st.WarmUntil).Msg("home warm until")
			}
			if err := d.announce(ctx, log, u, head, st, next, rev); err != nil {
				return err
			}
		case mem != nil:
			// Nothing to write, decided on the state as this dispatcher
			// last knew it, which another may have changed since: decide
			// again on the stored state.
			d.known.forget(u)
			continue
		}
		if empty {
			d.known.emptyAt(u, rev)
		}
		return d.carryOut(ctx, &step{u: u, log: log, input: input, in: in, head: head, before: st, now: next, rev: rev, effects: effects})
	}
}

// bookkeep is next, the machine's move from st on input, with what the
// dispatcher keeps besides: the IN sequence routed, the messages whose
// runs ended, since when the state is what it is.
func bookkeep(st, next contract.UserState, input fsm.Input) contract.UserState {
	next.InSeq = max(next.InSeq, input.InSeq)
	if st.Running() && (!next.Running() || next.JobID != st.JobID) {
		next.Finished = appendFinished(st.Finished, st.JobID) // ended or cancelled
	}
	if input.Kind == fsm.Done && input.ID != "" && input.ID != st.JobID && !slices.Contains(next.Finished, input.ID) {
		// A run that ended while the state (behind after a crash) did not
		// know it yet: its message must not start again from the queue.
		next.Finished = appendFinished(next.Finished, input.ID)
	}
	if next.State != st.State || next.JobID != st.JobID {
		next.Since = time.Now().UTC()
	}
	return next
}

// announce publishes the state event of a move from st to next, stored at
// rev, if the state or its job changed.
func (d *Dispatcher) announce(ctx context.Context, log zerolog.Logger, u contract.User, head *queued, st, next contract.UserState, rev uint64) error {
	if next.State == st.State && next.JobID == st.JobID {
		return nil
	}
	log.Info().Str("from", st.State).Str("to", next.State).Str("job", next.JobID).Msg("state")
	ev := contract.NewState(u, next.JobID, st.State, next.State)
	if ev.JobID == "" {
		ev.JobID = st.JobID
	}
	return bus.PublishEvent(head.traced(ctx, ev.JobID), d.js, ev, contract.MsgID(u, ev.JobID, "state", next.State, fmt.Sprint(rev)))
}

// catchUp takes in the end or the question of the run st says is under
// way, if the runner published one that this dispatcher's other consumer
// has not taken in yet, and reports whether it did. Egress tells the
// person as that consumer reads the event: a message the person sends at
// once (approve, reject, an answer) can come first, and must meet the
// state the person saw.
func (d *Dispatcher) catchUp(ctx context.Context, u contract.User, st contract.UserState) (bool, error) {
	if ev, ok := d.lastEvent(ctx, u, contract.KindDone, st.JobID); ok {
		return true, d.takeDone(ctx, ev)
	}
	if ev, ok := d.lastEvent(ctx, u, contract.KindQuestion, st.JobID); ok && ev.Question > st.Question {
		return true, d.apply(ctx, u, fsm.Input{Kind: fsm.Question, ID: ev.JobID, Question: ev.Question, Text: ev.Text}, nil)
	}
	return false, nil
}

// needsHead reports whether the machine needs the queue's head for input.
func needsHead(st contract.UserState, input fsm.Input) bool {
	idle := st.State == contract.StateIdle || st.State == ""
	switch input.Kind {
	case fsm.Message:
		return idle
	case fsm.Keyword:
		// go, btw, use and clone may turn out to be messages (or jobs); a
		// use is refused while messages wait.
		return (idle && (input.Keyword == fsm.Go || input.Keyword == fsm.Btw || input.Keyword == fsm.Clone ||
			input.Keyword == fsm.Preview || input.Keyword == fsm.Previews || input.Keyword == fsm.Stop)) ||
			input.Keyword == fsm.Use
	case fsm.Question:
		return false
	}
	return true
}

// changed reports whether now differs from before in anything stored.
// The machine hands back the maps and slices it does not change as they
// were, and never an empty map for none, so a step that changes nothing
// compares equal.
func changed(before, now contract.UserState) bool {
	return !reflect.DeepEqual(before, now)
}

// appendFinished remembers a finished job id, keeping the newest
// contract.FinishedKept.
func appendFinished(ids []string, id string) []string {
	ids = append(slices.Clone(ids), id)
	if n := len(ids) - contract.FinishedKept; n > 0 {
		ids = ids[n:]
	}
	return ids
}
