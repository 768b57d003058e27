package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// Reply windows. WhatsApp lets a business write freely only within 24
// hours of the person's last message; outside it Twilio refuses a message
// with 63016, at its create or in its status callback. Such a message is
// not dropped but held, in the egress bucket at contract.HeldKey (held.go),
// with every later message to the person behind it (their order kept); a
// configured template (an approved one, which may go out any time) tells
// the person once per held period that something waits. When they write,
// ingress publishes a window event (contract.KindWindow) and egress sends
// what it held, in order, before anything that comes after.

// window is a channel's reply window.
type window struct {
	// closed is the provider's error code of a message refused outside
	// the window: Twilio's 63016.
	closed int
	// template asks the person to write (Message.Template): a Content SID;
	// "" when none is configured.
	template string
}

// holder stands in front of the ledger on channels with a reply window:
// it holds the messages refused outside a person's window, and those
// behind them, until the person writes, then sends them in order. On the
// other channels it hands each message to the ledger.
type holder struct {
	kv   jetstream.KeyValue
	js   jetstream.JetStream
	log  zerolog.Logger
	once once // the ledger
}

// once is what the holder asks of the ledger: a message sent once for
// its slot (ledger.send), or recorded there as held.
type once interface {
	send(ctx context.Context, log zerolog.Logger, ch outlet, it item, s slot, m channel.Message) error
	markHeld(ctx context.Context, u contract.User, s slot) error
}

// heldMark is the value of a held message's sent key: a redelivery of its
// event neither sends nor holds it again.
const heldMark = "held"

// closedWindow is a message the provider refused outside the person's
// window, after attempts tries.
type closedWindow struct{ attempts int }

func (closedWindow) Error() string { return "outside the person's reply window" }

// sendPart sends part of the event it once (the ledger). On a channel
// with a reply window, a message refused outside it, or behind one held,
// is held (errHeld); errUndeliverable once a dead letter says it is not
// sent.
func (h *holder) sendPart(ctx context.Context, log zerolog.Logger, ch outlet, it item, part int, m channel.Message) error {
	log = log.With().Str("kind", string(it.ev.Kind)).Str("job_id", it.ev.JobID).Int("part", part).Logger()
	if ch.window != nil {
		if err := h.heldBefore(ctx, log, ch, it, part, m); err != nil {
			return err
		}
	}
	err := h.once.send(ctx, log, ch, it, partSlot(it, part), m)
	var closed closedWindow
	if errors.As(err, &closed) {
		return h.hold(ctx, log, ch, it, part, m, closed.attempts)
	}
	return err
}

// partSlot is the slot of part of the event it.
func partSlot(it item, part int) slot { return slot{seq: it.seq, part: strconv.Itoa(part)} }

// heldBefore holds m when the person already has messages held: behind
// them, in order (errHeld). A progress line is dropped instead (the reply
// after it tells more), and a part held before a redelivery stays where it
// is. nil: nothing is held, send m.
func (h *holder) heldBefore(ctx context.Context, log zerolog.Logger, ch outlet, it item, part int, m channel.Message) error {
	hd, _, err := h.load(ctx, it.ev.User)
	switch {
	case err != nil:
		return err
	case hd.has(it.seq, part):
		h.nudge(ctx, log, ch, it, hd) // a crash may have come between holding and the template
		return errHeld
	case len(hd.Msgs) == 0:
		return nil
	case m.Progress:
		log.Debug().Msg("progress dropped: earlier messages wait for the person to write")
		return errHeld
	}
	return h.hold(ctx, log, ch, it, part, m, 0)
}

// hold keeps m for the person until they write again and returns errHeld.
// refusals > 0: the provider refused m itself after that many tries, and
// a dead letter (held: true) says so; 0: m waits behind earlier ones. A
// refused progress line is not kept, and neither is a message beyond
// heldMaxBytes: their dead letters say so, and they are errUndeliverable.
func (h *holder) hold(ctx context.Context, log zerolog.Logger, ch outlet, it item, part int, m channel.Message, refusals int) error {
	u, s := it.ev.User, partSlot(it, part)
	l := log.With().Int("code", ch.window.closed).Str("hint", channel.Explain(ch.sender, ch.window.closed)).Logger()
	if m.Progress {
		l.Warn().Msg("progress refused outside the person's window; dropped")
		if err := deadLetter(ctx, h.js, it, s, m, ch.window.closed, refusals, false); err != nil {
			return err
		}
		return errUndeliverable
	}
	hd, _, err := h.update(ctx, u, func(hd *held) error {
		if hd.has(it.seq, part) {
			return nil
		}
		hd.Msgs = append(hd.Msgs, heldMsg{Seq: it.seq, Part: part, Kind: it.ev.Kind, JobID: it.ev.JobID,
			Body: m.Body, Media: m.Media, Choices: m.Choices, At: time.Now().UTC()})
		if data, _ := json.Marshal(hd); len(data) > heldMaxBytes {
			return errHeldFull
		}
		if refusals > 0 {
			// Before the message is stored: a crash in between sends it
			// again, and the same dead letter is dropped as a duplicate.
			return deadLetter(ctx, h.js, it, s, m, ch.window.closed, refusals, true)
		}
		return nil
	})
	if errors.Is(err, errHeldFull) {
		l.Error().Int("held", len(hd.Msgs)).Msg("too many messages held for the person; this one dropped, dead letter published")
		if err := deadLetter(ctx, h.js, it, s, m, ch.window.closed, refusals, false); err != nil {
			return err
		}
		return errUndeliverable
	}
	if err != nil {
		return err
	}
	if err := h.once.markHeld(ctx, u, s); err != nil {
		return err
	}
	if refusals > 0 {
		l.Warn().Int("held", len(hd.Msgs)).Msg("refused outside the person's window: held until they write, dead letter published")
	} else {
		l.Info().Int("held", len(hd.Msgs)).Msg("held behind earlier messages until the person writes")
	}
	h.nudge(ctx, log, ch, it, hd)
	return errHeld
}

// nudge sends the channel's template, once per held period, so that the
// person knows something waits for them. A failure is logged: the
// messages stay held all the same.
func (h *holder) nudge(ctx context.Context, log zerolog.Logger, ch outlet, it item, hd held) {
	if ch.window.template == "" || hd.Nudged || len(hd.Msgs) == 0 {
		return
	}
	first := hd.Msgs[0] // the held period's first message names its template's slot
	u := it.ev.User
	tmpl := item{msg: it.msg, ev: contract.NewWindow(u, first.JobID), seq: first.Seq}
	log = log.With().Str("template", ch.window.template).Logger()
	err := h.once.send(ctx, log, ch, tmpl, slot{seq: first.Seq, part: "window"}, channel.Message{Template: ch.window.template})
	var closed closedWindow
	switch {
	case err == nil:
		log.Info().Msg("template sent: the person is asked to write")
	case errors.Is(err, errUndeliverable), errors.As(err, &closed):
		log.Error().Err(err).Msg("template not sent (is TWILIO_CONTENT_SID_WINDOW an approved template?); messages stay held")
	default:
		log.Warn().Err(err).Msg("template not sent yet; tried again with the next message held")
		return
	}
	if _, _, err := h.update(ctx, u, func(hd *held) error {
		hd.Nudged = true
		return nil
	}); err != nil {
		log.Warn().Err(err).Msg("template not recorded as sent")
	}
}

// flush sends the person's held messages in order, now that they wrote
// (the window event it): each is taken off once sent, so a crash sends
// none twice (the slots are the window event's, so a later window event
// sends what an earlier one left). A refusal outside the window again
// leaves the rest held.
func (h *holder) flush(ctx context.Context, log zerolog.Logger, ch outlet, it item) error {
	if ch.window == nil {
		return nil
	}
	u := it.ev.User
	sent := 0
	for {
		hd, _, err := h.load(ctx, u)
		if err != nil {
			return err
		}
		if len(hd.Msgs) == 0 {
			if sent > 0 {
				log.Info().Int("sent", sent).Msg("held messages sent: the person wrote")
			}
			return nil
		}
		hm := hd.Msgs[0]
		one := item{msg: it.msg, ev: contract.Event{Kind: hm.Kind, User: u, JobID: hm.JobID}, seq: it.seq}
		l := log.With().Str("kind", string(hm.Kind)).Str("job_id", hm.JobID).Uint64("held_seq", hm.Seq).Int("part", hm.Part).Logger()
		err = h.once.send(ctx, l, ch, one, slot{seq: it.seq, part: fmt.Sprintf("held-%d-%d", hm.Seq, hm.Part)}, hm.message(time.Now(), ch.rules.BodyLimit))
		var closed closedWindow
		switch {
		case errors.As(err, &closed):
			l.Warn().Int("held", len(hd.Msgs)).Msg("refused outside the person's window again; the messages stay held")
			return nil
		case err != nil && !errors.Is(err, errUndeliverable):
			return err
		}
		if _, _, err := h.update(ctx, u, func(hd *held) error {
			if len(hd.Msgs) > 0 && hd.Msgs[0].Seq == hm.Seq && hd.Msgs[0].Part == hm.Part {
				hd.Msgs = hd.Msgs[1:]
			}
			return nil
		}); err != nil {
			return err
		}
		sent++
	}
}
