package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/textslash/textslash/channel"

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

func pagesKey(u contract.User) string { return "pages." + u.Key() }

// pageStore keeps each person's pages of their last long reply in the
// egress bucket (pagesKey), for "more".
type pageStore struct {
	kv jetstream.KeyValue

	mu sync.Mutex
	// none are the people known to have no pages left: egress alone
	// writes them, so a short reply need not clear them.
	none map[string]bool
}

// keep stores rest, the pages of u's reply (of job jobID) after what was
// sent; none left clears those of an earlier reply, if there may be
// some.
func (s *pageStore) keep(ctx context.Context, u contract.User, jobID string, rest []string) error {
	if len(rest) > 0 {
		s.setNone(u, false)
		data, _ := json.Marshal(pagesLeft{JobID: jobID, Pages: rest})
		if _, err := s.kv.Put(ctx, pagesKey(u), data); err != nil {
			return fmt.Errorf("store pages: %w", err)
		}
		return nil
	}
	if s.hasNone(u) {
		return nil
	}
	if err := s.kv.Delete(ctx, pagesKey(u)); err != nil {
		return fmt.Errorf("clear pages: %w", err)
	}
	s.setNone(u, true)
	return nil
}

// load returns u's pages left and their revision; none: zero.
func (s *pageStore) load(ctx context.Context, log zerolog.Logger, u contract.User) (pagesLeft, uint64, error) {
	var left pagesLeft
	entry, err := s.kv.Get(ctx, pagesKey(u))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return left, 0, nil
	case err != nil:
		return left, 0, fmt.Errorf("load pages: %w", err)
	}
	if err := json.Unmarshal(entry.Value(), &left); err != nil {
		log.Warn().Err(err).Msg("pages unreadable; dropped")
	}
	return left, entry.Revision(), nil
}

// took stores left, u's pages after a "more" took one, over revision rev.
func (s *pageStore) took(ctx context.Context, u contract.User, left pagesLeft, rev uint64) error {
	s.setNone(u, false)
	data, _ := json.Marshal(left)
	if _, err := s.kv.Update(ctx, pagesKey(u), data, rev); err != nil {
		return fmt.Errorf("store pages: %w", err)
	}
	return nil
}

// hasNone reports whether u is known to have no pages left.
func (s *pageStore) hasNone(u contract.User) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.none[u.Key()]
}

// setNone notes that u has no pages left (none), or may have some.
func (s *pageStore) setNone(u contract.User, none bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !none:
		delete(s.none, u.Key())
	case s.none == nil || len(s.none) >= 100_000:
		s.none = map[string]bool{u.Key(): true}
	default:
		s.none[u.Key()] = true
	}
}

// more sends the next page of the user's last long reply (the "more"
// event it), or says there is none.
func (o *outbox) more(ctx context.Context, log zerolog.Logger, ch outlet, it item) error {
	u := it.ev.User
	left, rev, err := o.pages.load(ctx, log, u)
	if err != nil {
		return err
	}
	if left.MoreSeq == it.seq {
		return nil // this "more" took its page before a restart
	}
	if len(left.Pages) == 0 {
		return handled(o.parts.sendPart(ctx, log, ch, it, 0, channel.Message{Body: MsgNoMore}))
	}
	if err := handled(o.parts.sendPart(ctx, log, ch, it, 0, channel.Message{Body: left.Pages[0], JobID: left.JobID})); err != nil {
		return err
	}
	left.Pages, left.MoreSeq = left.Pages[1:], it.seq
	return o.pages.took(ctx, u, left, rev)
}
