package ingress

import (
	"context"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// gate lets in, beyond the configured allowlists, the people paired in and
// strangers whose message is a pending pairing code (contract.Pairing).
// Until Run has opened it, only the allowlists count.
type gate struct {
	people  atomic.Pointer[contract.People]
	pairing atomic.Pointer[contract.Pairing]
}

// openGate follows the people paired in until ctx ends.
func (i *Ingress) openGate(ctx context.Context) error {
	p, err := contract.OpenPairing(ctx, i.js)
	if err != nil {
		return err
	}
	people, err := contract.WatchPeople(ctx, i.js)
	if err != nil {
		return err
	}
	i.gate.pairing.Store(p)
	i.gate.people.Store(people)
	return nil
}

// paired reports whether u was paired in.
func (i *Ingress) paired(u contract.User) bool { return i.gate.people.Load().Has(u) }

// pairIn pairs a stranger in when their message (id) is a pending code:
// the message is then published as Paired, for the dispatcher to welcome
// them. Anything else a stranger sends is ignored, and they are told
// nothing.
func (i *Ingress) pairIn(ctx context.Context, log zerolog.Logger, u contract.User, id, text string) (contract.Inbound, bool) {
	p := i.gate.pairing.Load()
	if p == nil {
		return contract.Inbound{}, false
	}
	ok, err := p.Redeem(ctx, u, text)
	if err != nil {
		log.Error().Err(err).Msg("pairing code not checked")
	}
	if !ok {
		return contract.Inbound{}, false
	}
	log.Info().Msg("paired in with a code")
	return contract.Inbound{ID: id, User: u, Paired: true}, true
}
