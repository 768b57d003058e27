package ingress

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// pairIn pairs a stranger in when their message (id) is a pending code
// (contract.Allowlist.Redeem): the message is then published as Paired,
// for the dispatcher to welcome them. Anything else a stranger sends is
// ignored, and they are told nothing.
func (i *Ingress) pairIn(ctx context.Context, log zerolog.Logger, u contract.User, id, text string) (contract.Inbound, bool) {
	ok, err := i.allow.Redeem(ctx, u, text)
	if err != nil {
		log.Error().Err(err).Msg("pairing code not checked")
	}
	if !ok {
		return contract.Inbound{}, false
	}
	log.Info().Msg("paired in with a code")
	return contract.Inbound{ID: id, User: u, Paired: true}, true
}
