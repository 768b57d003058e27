package ingress

import (
	"context"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// pairIn pairs a stranger in when their message (id) is a pending code
// (Inbox.Admit): the message is then published as Paired, for the
// dispatcher to welcome them. Anything else a stranger sends is ignored,
// and they are told nothing.
func (i *Ingress) pairIn(ctx context.Context, log zerolog.Logger, u contract.User, id, text string) (contract.Inbound, bool) {
	in, err := i.inbox.Admit(ctx, contract.Inbound{ID: id, User: u, Text: text})
	if err != nil {
		log.Debug().Str("user", u.Key()).Msg("stranger's message is no pairing code")
		return contract.Inbound{}, false
	}
	return in, true
}
