package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// pagesLeft is what the egress bucket keeps of a user's last long reply.
type pagesLeft struct {
	JobID string   `json:"job_id"`
	Pages []string `json:"pages"`
	// MoreSeq is the EVENTS sequence of the "more" that took the last
	// page, so a redelivered "more" does not take another.
	MoreSeq uint64 `json:"more_seq,omitempty"`
}

// more sends the next page of the user's last long reply.
func (p *pusher) more(ctx context.Context, log zerolog.Logger, ch channel, it item) error {
	u := it.ev.User
	entry, err := p.kv.Get(ctx, pagesKey(u))
	var left pagesLeft
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
	case err != nil:
		return fmt.Errorf("load pages: %w", err)
	default:
		if err := json.Unmarshal(entry.Value(), &left); err != nil {
			log.Warn().Err(err).Msg("pages unreadable; dropped")
		}
	}
	if left.MoreSeq == it.seq {
		return nil // this "more" took its page before a restart
	}
	if len(left.Pages) == 0 {
		err := p.sendOnce(ctx, log, ch, it, 0, Message{Body: MsgNoMore})
		if errors.Is(err, errUndeliverable) || errors.Is(err, errHeld) {
			return nil
		}
		return err
	}
	if err := p.sendOnce(ctx, log, ch, it, 0, Message{Body: left.Pages[0]}); err != nil && !errors.Is(err, errUndeliverable) && !errors.Is(err, errHeld) {
		return err
	}
	left.Pages, left.MoreSeq = left.Pages[1:], it.seq
	p.setNoPages(u, false)
	data, _ := json.Marshal(left)
	if _, err := p.kv.Update(ctx, pagesKey(u), data, entry.Revision()); err != nil {
		return fmt.Errorf("store pages: %w", err)
	}
	return nil
}

func pagesKey(u contract.User) string { return "pages." + u.Key() }

// hasNoPages reports whether u is known to have no pages left.
func (p *pusher) hasNoPages(u contract.User) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.noPages[u.Key()]
}

// setNoPages notes that u has no pages left (none), or may have some.
func (p *pusher) setNoPages(u contract.User, none bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !none:
		delete(p.noPages, u.Key())
	case p.noPages == nil || len(p.noPages) >= 100_000:
		p.noPages = map[string]bool{u.Key(): true}
	default:
		p.noPages[u.Key()] = true
	}
}
