package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/egress/internal/pages"
)

// Reply windows. WhatsApp lets a business write freely only within 24
// hours of the person's last message; outside it Twilio refuses a message
// with 63016, at its create or in its status callback. Such a message is
// not dropped but held, in the egress bucket at contract.HeldKey, with
// every later message to the person behind it (their order kept); a
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

// held is what the egress bucket keeps at contract.HeldKey: the person's
// messages waiting for them to write, oldest first.
type held struct {
	Msgs []heldMsg `json:"msgs"`
	// Nudged: the template went out in this held period (which ends when
	// the last message is sent and the key deleted).
	Nudged bool `json:"nudged,omitempty"`
}

// heldMsg is one message held: part Part of the event at EVENTS sequence
// Seq, as composed for the channel.
type heldMsg struct {
	Seq     uint64             `json:"seq"`
	Part    int                `json:"part"`
	Kind    contract.EventKind `json:"kind"`
	JobID   string             `json:"job_id,omitempty"`
	Body    string             `json:"body,omitempty"`
	Media   []string           `json:"media,omitempty"`
	Choices []string           `json:"choices,omitempty"`
	At      time.Time          `json:"at"`
}

func (h held) has(seq uint64, part int) bool {
	for _, m := range h.Msgs {
		if m.Seq == seq && m.Part == part {
			return true
		}
	}
	return false
}

// heldMaxBytes bounds one person's held messages (a KV value is at most
// 1 MiB): about 150 full-length pages. A message beyond it is dropped
// with a dead letter.
const heldMaxBytes = 512 << 10

// heldMark is the value of a held message's sent key: a redelivery of its
// event neither sends nor holds it again.
const heldMark = "held"

// closedWindow is a message the provider refused outside the person's
// window, after attempts tries.
type closedWindow struct{ attempts int }

func (closedWindow) Error() string { return "outside the person's reply window" }

// Texts of held messages.
const msgImagesExpired = "(%d image(s) expired while this message waited for you.)"

// heldBefore holds m when the person already has messages held: behind
// them, in order (errHeld). A progress line is dropped instead (the reply
// after it tells more), and a part held before a redelivery stays where it
// is. nil: nothing is held, send m.
func (p *pusher) heldBefore(ctx context.Context, log zerolog.Logger, ch channel, it item, part int, m Message) error {
	h, _, err := p.loadHeld(ctx, it.ev.User)
	switch {
	case err != nil:
		return err
	case h.has(it.seq, part):
		p.nudge(ctx, log, ch, it, h) // a crash may have come between holding and the template
		return errHeld
	case len(h.Msgs) == 0:
		return nil
	case m.Progress:
		log.Debug().Msg("progress dropped: earlier messages wait for the person to write")
		return errHeld
	}
	return p.hold(ctx, log, ch, it, part, m, 0)
}

// hold keeps m for the person until they write again and returns errHeld.
// refusals > 0: the provider refused m itself after that many tries, and
// a dead letter (held: true) says so; 0: m waits behind earlier ones. A
// refused progress line is not kept, and neither is a message beyond
// heldMaxBytes: their dead letters say so, and they are errUndeliverable.
func (p *pusher) hold(ctx context.Context, log zerolog.Logger, ch channel, it item, part int, m Message, refusals int) error {
	u := it.ev.User
	l := log.With().Int("code", ch.window.closed).Str("hint", explain(ch.sender, ch.window.closed)).Logger()
	dead := contract.Event{Kind: contract.KindUndelivered, User: u, JobID: it.ev.JobID, Text: m.Body,
		Code: ch.window.closed, Attempts: refusals, Held: true}
	deadID := contract.MsgID(u, strconv.FormatUint(it.seq, 10), "undelivered", strconv.Itoa(part))
	if m.Progress {
		dead.Held = false
		l.Warn().Msg("progress refused outside the person's window; dropped")
		if err := contract.PublishEvent(ctx, p.js, dead, deadID); err != nil {
			return err
		}
		return errUndeliverable
	}
	h, _, err := p.updateHeld(ctx, u, func(h *held) error {
		if h.has(it.seq, part) {
			return nil
		}
		h.Msgs = append(h.Msgs, heldMsg{Seq: it.seq, Part: part, Kind: it.ev.Kind, JobID: it.ev.JobID,
			Body: m.Body, Media: m.Media, Choices: m.Choices, At: time.Now().UTC()})
		if data, _ := json.Marshal(h); len(data) > heldMaxBytes {
			return errHeldFull
		}
		if refusals > 0 {
			// Before the message is stored: a crash in between sends it
			// again, and the same dead letter is dropped as a duplicate.
			return contract.PublishEvent(ctx, p.js, dead, deadID)
		}
		return nil
	})
	if errors.Is(err, errHeldFull) {
		dead.Held = false
		l.Error().Int("held", len(h.Msgs)).Msg("too many messages held for the person; this one dropped, dead letter published")
		if err := contract.PublishEvent(ctx, p.js, dead, deadID); err != nil {
			return err
		}
		return errUndeliverable
	}
	if err != nil {
		return err
	}
	if _, err := p.kv.Put(ctx, sentKey(u, slot{seq: it.seq, part: strconv.Itoa(part)}), []byte(heldMark)); err != nil {
		return fmt.Errorf("held mark: %w", err)
	}
	if refusals > 0 {
		l.Warn().Int("held", len(h.Msgs)).Msg("refused outside the person's window: held until they write, dead letter published")
	} else {
		l.Info().Int("held", len(h.Msgs)).Msg("held behind earlier messages until the person writes")
	}
	p.nudge(ctx, log, ch, it, h)
	return errHeld
}

// nudge sends the channel's template, once per held period, so that the
// person knows something waits for them. A failure is logged: the
// messages stay held all the same.
func (p *pusher) nudge(ctx context.Context, log zerolog.Logger, ch channel, it item, h held) {
	if ch.window.template == "" || h.Nudged || len(h.Msgs) == 0 {
		return
	}
	first := h.Msgs[0] // the held period's first message names its template's slot
	u := it.ev.User
	tmpl := item{msg: it.msg, ev: contract.Event{Kind: contract.KindWindow, User: u, JobID: first.JobID}, seq: first.Seq}
	log = log.With().Str("template", ch.window.template).Logger()
	err := p.sendKeyed(ctx, log, ch, tmpl, slot{seq: first.Seq, part: "window"}, Message{Template: ch.window.template})
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
	if _, _, err := p.updateHeld(ctx, u, func(h *held) error {
		h.Nudged = true
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
func (p *pusher) flush(ctx context.Context, log zerolog.Logger, ch channel, it item) error {
	if ch.window == nil {
		return nil
	}
	u := it.ev.User
	sent := 0
	for {
		h, _, err := p.loadHeld(ctx, u)
		if err != nil {
			return err
		}
		if len(h.Msgs) == 0 {
			if sent > 0 {
				log.Info().Int("sent", sent).Msg("held messages sent: the person wrote")
			}
			return nil
		}
		hm := h.Msgs[0]
		one := item{msg: it.msg, ev: contract.Event{Kind: hm.Kind, User: u, JobID: hm.JobID}, seq: it.seq}
		l := log.With().Str("kind", string(hm.Kind)).Str("job_id", hm.JobID).Uint64("held_seq", hm.Seq).Int("part", hm.Part).Logger()
		err = p.sendKeyed(ctx, l, ch, one, slot{seq: it.seq, part: fmt.Sprintf("held-%d-%d", hm.Seq, hm.Part)}, hm.message(time.Now(), ch.rules.BodyLimit))
		var closed closedWindow
		switch {
		case errors.As(err, &closed):
			l.Warn().Int("held", len(h.Msgs)).Msg("refused outside the person's window again; the messages stay held")
			return nil
		case err != nil && !errors.Is(err, errUndeliverable):
			return err
		}
		if _, _, err := p.updateHeld(ctx, u, func(h *held) error {
			if len(h.Msgs) > 0 && h.Msgs[0].Seq == hm.Seq && h.Msgs[0].Part == hm.Part {
				h.Msgs = h.Msgs[1:]
			}
			return nil
		}); err != nil {
			return err
		}
		sent++
	}
}

// message is hm as sent now: images whose links expired (they last
// TEXTSLASH_MEDIA_TTL) are left out, with a note.
func (hm heldMsg) message(now time.Time, limit int) Message {
	m := Message{Body: hm.Body, Choices: hm.Choices}
	gone := 0
	for _, link := range hm.Media {
		if linkExpired(link, now) {
			gone++
			continue
		}
		m.Media = append(m.Media, link)
	}
	if gone > 0 {
		note := fmt.Sprintf(msgImagesExpired, gone)
		if m.Body != "" {
			note += "\n\n"
		}
		m.Body = pages.Truncate(note+m.Body, limit, "…")
	}
	return m
}

// linkExpired reports whether an image link egress signed is past its
// expiry (its e query value, Unix seconds).
func linkExpired(link string, now time.Time) bool {
	u, err := url.Parse(link)
	if err != nil {
		return false
	}
	e, err := strconv.ParseInt(u.Query().Get("e"), 10, 64)
	return err == nil && now.Unix() > e
}

// loadHeld returns u's held messages and their revision; none: zero.
func (p *pusher) loadHeld(ctx context.Context, u contract.User) (held, uint64, error) {
	var h held
	e, err := p.kv.Get(ctx, contract.HeldKey(u))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return h, 0, nil
	}
	if err != nil {
		return h, 0, fmt.Errorf("load held messages: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &h); err != nil {
		p.log.Error().Err(err).Str("user", u.Key()).Msg("held messages unreadable; dropped")
		return held{}, e.Revision(), nil
	}
	return h, e.Revision(), nil
}

// updateHeld changes u's held messages by compare-and-set: change gets
// the stored ones and is called again after a conflict (the refresh wrote
// them meanwhile). None left deletes the key. It returns them as stored.
func (p *pusher) updateHeld(ctx context.Context, u contract.User, change func(*held) error) (held, uint64, error) {
	key := contract.HeldKey(u)
	for try := 1; ; try++ {
		h, rev, err := p.loadHeld(ctx, u)
		if err != nil {
			return h, 0, err
		}
		if err := change(&h); err != nil {
			return h, rev, err
		}
		data, _ := json.Marshal(h)
		switch {
		case len(h.Msgs) == 0 && rev == 0:
			return h, 0, nil
		case len(h.Msgs) == 0:
			err = p.kv.Delete(ctx, key, jetstream.LastRevision(rev))
			rev = 0
		case rev == 0:
			rev, err = p.kv.Create(ctx, key, data)
		default:
			rev, err = p.kv.Update(ctx, key, data, rev)
		}
		conflict := errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
		if err == nil || !conflict || try == 3 {
			if err != nil {
				err = fmt.Errorf("store held messages: %w", err)
			}
			return h, rev, err
		}
	}
}

// heldRefresh: held messages this old are written again, so that the
// egress bucket's TTL (24 h) never expires them while the person is away.
const heldRefresh = 6 * time.Hour

// refreshHeld writes again every person's held messages older than age.
func (p *pusher) refreshHeld(ctx context.Context, age time.Duration) {
	if !p.windowed() {
		return
	}
	keys, err := p.kv.ListKeysFiltered(ctx, "held.>")
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
			p.log.Warn().Err(err).Msg("held messages not refreshed")
		}
		return
	}
	defer func() { _ = keys.Stop() }()
	for key := range keys.Keys() {
		e, err := p.kv.Get(ctx, key)
		if err != nil || time.Since(e.Created()) < age {
			continue
		}
		if _, err := p.kv.Update(ctx, key, e.Value(), e.Revision()); err != nil {
			p.log.Debug().Err(err).Str("key", key).Msg("held messages not refreshed")
		}
	}
}

// windowed reports whether a channel has a reply window.
func (p *pusher) windowed() bool {
	for _, ch := range p.channels {
		if ch.window != nil {
			return true
		}
	}
	return false
}
