package egress

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
)

// ledger sends each message once, across restarts: the egress bucket
// records every message egress sends at its slot (sentKey), a try's mark
// before it and the provider's id after. Failures that may pass are
// retried with backoff (Retry), the event kept in hand meanwhile; a
// message that cannot be sent is a dead letter (contract.KindUndelivered).
// When the channel asks for it, a send waits for the provider to report
// the message sent (sentWaiter). It knows nothing of reply windows: a
// refusal outside one is its caller's (closedWindow).
type ledger struct {
	kv     jetstream.KeyValue
	js     jetstream.JetStream
	retry  channel.Retry
	status *sentWaiter // nil: do not wait for delivery status
}

// slot names one message egress sends: its key in the egress bucket,
// sent.<user>.<seq>.<part>, and its dead letter's Nats-Msg-Id.
type slot struct {
	seq  uint64 // EVENTS sequence of the event that asked for it
	part string
}

// send sends m, of the event it, once for its slot, retrying failures
// that may pass; then it waits for the provider to report the message
// sent, if status reports are on. A refusal outside the channel's reply
// window is a closedWindow, with no dead letter; errUndeliverable once
// the dead letter of a message refused for good is published.
func (lg *ledger) send(ctx context.Context, log zerolog.Logger, ch outlet, it item, s slot, m channel.Message) error {
	// The key holds the provider's id once sent; before the first try it
	// is marked with the time, so that a crash between a send and its
	// record can be told from a send never tried. Creating that mark is
	// a first try's only operation; a mark already there (a redelivery)
	// is read.
	key := sentKey(it.ev.User, s)
	_, err := lg.kv.Create(ctx, key, []byte(triedMark+time.Now().UTC().Format(time.RFC3339Nano)))
	if errors.Is(err, jetstream.ErrKeyExists) {
		if sent, err := lg.sentBefore(ctx, log, ch, it, key, m); err != nil || sent {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("tried mark: %w", err)
	}
	var unanswered bool // the last try failed without the provider's answer
	var tried time.Time
	for attempt := 1; ; attempt++ {
		if unanswered && lg.foundUnanswered(ctx, log, ch, it, key, m, tried) {
			return nil
		}
		tried = time.Now()
		id, err := ch.send(ctx, it.ev.User, m)
		if err == nil {
			return lg.sent(ctx, log, ch, it, key, id, m, attempt)
		}
		var se *channel.SendError
		if !errors.As(err, &se) {
			se = &channel.SendError{Err: err}
		}
		unanswered = se.Status == 0 && se.Code == 0
		if err := lg.failed(ctx, log, ch, it, s, m, se, attempt); err != nil {
			return err
		}
	}
}

// foundUnanswered reports whether a try of m that got no answer (a
// timeout, from tried on) was taken all the same, as the channel's
// Finder tells; then the provider's id is recorded at key.
func (lg *ledger) foundUnanswered(ctx context.Context, log zerolog.Logger, ch outlet, it item, key string, m channel.Message, tried time.Time) bool {
	id, err := ch.find(ctx, it.ev.User, m, tried)
	if err != nil || id == "" {
		return false
	}
	log.Info().Str("provider_id", id).Msg("a try that got no answer was sent; not sending again")
	_, _ = lg.kv.Put(ctx, key, []byte(id))
	return true
}

// sent records at key that m went out as the provider's message id, and
// waits for the provider to report it sent when the channel asks for
// that: a refusal outside the reply window reported then is a
// closedWindow.
func (lg *ledger) sent(ctx context.Context, log zerolog.Logger, ch outlet, it item, key, id string, m channel.Message, attempt int) error {
	var wait <-chan delivery
	if lg.status != nil && ch.waitSent {
		wait = lg.status.expect(id)
	}
	if _, err := lg.kv.Put(ctx, key, []byte(id)); err != nil {
		log.Warn().Err(err).Str("provider_id", id).Msg("sent mark not stored; a redelivery would send again")
	}
	messagesOut.WithLabelValues(it.ev.User.Channel, string(it.ev.Kind)).Inc()
	log.Info().Str("provider_id", id).Int("body_len", len(m.Body)).Int("media", len(m.Media)).Int("attempt", attempt).Msg("sent")
	if wait == nil {
		return nil
	}
	d := lg.status.await(ctx, log, it.msg, id, wait)
	if !d.failed() {
		return nil
	}
	l := log.Warn().Str("provider_id", id).Str("status", d.status).Int("code", d.code)
	if hint := channel.Explain(ch.sender, d.code); hint != "" {
		l = l.Str("hint", hint)
	}
	l.Msg("provider could not deliver the message")
	if ch.window != nil && d.code == ch.window.closed {
		sendErrors.WithLabelValues(it.ev.User.Channel, strconv.Itoa(d.code)).Inc()
		return closedWindow{attempts: attempt}
	}
	return nil
}

// failed handles try attempt of m, which failed with se: nil once the
// next try may go (after the retry delay, m's event kept in hand
// meanwhile); a closedWindow for a refusal outside the reply window;
// errUndeliverable once the dead letter is published, when trying again
// cannot help or the tries are used up.
func (lg *ledger) failed(ctx context.Context, log zerolog.Logger, ch outlet, it item, s slot, m channel.Message, se *channel.SendError, attempt int) error {
	sendErrors.WithLabelValues(it.ev.User.Channel, strconv.Itoa(se.Code)).Inc()
	l := log.With().Err(se.Err).Int("code", se.Code).Int("status", se.Status).Int("attempt", attempt).Logger()
	if hint := channel.Explain(ch.sender, se.Code); hint != "" {
		l = l.With().Str("hint", hint).Logger()
	}
	if ch.window != nil && se.Code == ch.window.closed {
		return closedWindow{attempts: attempt}
	}
	if se.Permanent || attempt >= lg.retry.Attempts {
		l.Error().Msg("message not delivered; dead letter published")
		if err := deadLetter(ctx, lg.js, it, s, m, se.Code, attempt, false); err != nil {
			return err
		}
		return errUndeliverable
	}
	d := max(lg.retry.Delay(attempt), se.RetryAfter)
	l.Warn().Dur("retry_in_ms", d).Msg("send failed; will retry")
	return sleep(ctx, it.msg, d)
}

// sentBefore reads the mark at key of a message sent again (a redelivery)
// and reports whether it was sent, or held, before: a mark of a try that
// the provider has no record of is not.
func (lg *ledger) sentBefore(ctx context.Context, log zerolog.Logger, ch outlet, it item, key string, m channel.Message) (bool, error) {
	e, err := lg.kv.Get(ctx, key)
	if err != nil {
		return false, fmt.Errorf("sent mark: %w", err)
	}
	if string(e.Value()) == heldMark {
		return true, nil // held for the person, and sent or still held
	}
	at, tried := strings.CutPrefix(string(e.Value()), triedMark)
	if !tried {
		return true, nil
	}
	since, _ := time.Parse(time.RFC3339Nano, at)
	id, err := ch.find(ctx, it.ev.User, m, since)
	if err != nil {
		return false, fmt.Errorf("look for an unrecorded send: %w", err)
	}
	if id != "" {
		log.Info().Str("provider_id", id).Msg("sent before a restart; not sending again")
		if _, err := lg.kv.Put(ctx, key, []byte(id)); err != nil {
			return false, fmt.Errorf("sent mark: %w", err)
		}
		return true, nil
	}
	log.Info().Str("tried_at", at).Msg("tried before a restart and not known to the provider; sending")
	return false, nil
}

// markHeld records at s that its message is held for the person
// (heldMark): a redelivery of its event neither sends nor holds it again.
func (lg *ledger) markHeld(ctx context.Context, u contract.User, s slot) error {
	if _, err := lg.kv.Put(ctx, sentKey(u, s), []byte(heldMark)); err != nil {
		return fmt.Errorf("held mark: %w", err)
	}
	return nil
}

// deadLetter publishes the dead letter of m, part s of the event it:
// refused with the provider's code after attempts tries; held: it waits
// for the person all the same. Its Nats-Msg-Id is the slot's, so that a
// dead letter published again after a crash is dropped as a duplicate.
func deadLetter(ctx context.Context, js jetstream.JetStream, it item, s slot, m channel.Message, code, attempts int, held bool) error {
	dead := contract.NewUndelivered(it.ev.User, it.ev.JobID, m.Body, code, attempts, held)
	return bus.PublishEvent(ctx, js, dead, contract.MsgID(it.ev.User, strconv.FormatUint(s.seq, 10), "undelivered", s.part))
}

// triedMark starts the value of a send's key until the provider's id
// replaces it.
const triedMark = "tried "

// sentKey is a slot's key in the egress bucket.
func sentKey(u contract.User, s slot) string {
	return "sent." + u.Key() + "." + strconv.FormatUint(s.seq, 10) + "." + s.part
}
