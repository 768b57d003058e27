package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/pages"
)

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

// Texts of held messages.
const msgImagesExpired = "(%d image(s) expired while this message waited for you.)"

// message is hm as sent now: images whose links expired (they last
// TEXTSLASH_MEDIA_TTL) are left out, with a note.
func (hm heldMsg) message(now time.Time, limit int) channel.Message {
	m := channel.Message{Body: hm.Body, Choices: hm.Choices}
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

// load returns u's held messages and their revision; none: zero.
func (h *holder) load(ctx context.Context, u contract.User) (held, uint64, error) {
	var hd held
	e, err := h.kv.Get(ctx, contract.HeldKey(u))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return hd, 0, nil
	}
	if err != nil {
		return hd, 0, fmt.Errorf("load held messages: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &hd); err != nil {
		h.log.Error().Err(err).Str("user", u.Key()).Msg("held messages unreadable; dropped")
		return held{}, e.Revision(), nil
	}
	return hd, e.Revision(), nil
}

// update changes u's held messages by compare-and-set: change gets the
// stored ones and is called again after a conflict (the refresh wrote
// them meanwhile). None left deletes the key. It returns them as stored.
func (h *holder) update(ctx context.Context, u contract.User, change func(*held) error) (held, uint64, error) {
	key := contract.HeldKey(u)
	for try := 1; ; try++ {
		hd, rev, err := h.load(ctx, u)
		if err != nil {
			return hd, 0, err
		}
		if err := change(&hd); err != nil {
			return hd, rev, err
		}
		data, _ := json.Marshal(hd)
		switch {
		case len(hd.Msgs) == 0 && rev == 0:
			return hd, 0, nil
		case len(hd.Msgs) == 0:
			err = h.kv.Delete(ctx, key, jetstream.LastRevision(rev))
			rev = 0
		case rev == 0:
			rev, err = h.kv.Create(ctx, key, data)
		default:
			rev, err = h.kv.Update(ctx, key, data, rev)
		}
		conflict := errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
		if err == nil || !conflict || try == 3 {
			if err != nil {
				err = fmt.Errorf("store held messages: %w", err)
			}
			return hd, rev, err
		}
	}
}

// heldRefresh: held messages this old are written again, so that the
// egress bucket's TTL (24 h) never expires them while the person is away.
const heldRefresh = 6 * time.Hour

// refresh writes again every person's held messages older than age.
func (h *holder) refresh(ctx context.Context, age time.Duration) {
	keys, err := h.kv.ListKeysFiltered(ctx, "held.>")
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
			h.log.Warn().Err(err).Msg("held messages not refreshed")
		}
		return
	}
	defer func() { _ = keys.Stop() }()
	for key := range keys.Keys() {
		e, err := h.kv.Get(ctx, key)
		if err != nil || time.Since(e.Created()) < age {
			continue
		}
		if _, err := h.kv.Update(ctx, key, e.Value(), e.Revision()); err != nil {
			h.log.Debug().Err(err).Str("key", key).Msg("held messages not refreshed")
		}
	}
}
