package dispatcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher/internal/fsm"
)

// MsgWelcome answers the message that paired a person in.
const MsgWelcome = "Welcome: you are paired in and can use textslash now.\n\n"

// admin does what an admin asked: pair, people or revoke.
func (d *Dispatcher) admin(ctx context.Context, u contract.User, what, arg string) (string, error) {
	if !slices.Contains(d.cfg.Admins, contract.PersonKey(u)) {
		return "Only an admin (TEXTSLASH_ADMINS) can pair people in, list or revoke them.", nil
	}
	switch what {
	case fsm.Pair:
		code, err := d.pairing.NewCode(ctx, u.Key())
		if errors.Is(err, contract.ErrTooManyCodes) {
			return fmt.Sprintf("%d codes wait already, the most there may be; each lasts an hour.", contract.PairingPending), nil
		}
		if err != nil {
			return "", err
		}
		return "Pairing code: " + code + "\nValid for an hour, for one new person: they send it as their first message to this number or bot.", nil
	case fsm.People:
		people, err := d.pairing.List(ctx)
		if err != nil || len(people) == 0 {
			return "Nobody is paired in (the configured allowlists are not listed).", err
		}
		var b strings.Builder
		b.WriteString("Paired in:")
		for _, p := range people {
			fmt.Fprintf(&b, "\n%s  since %s", contract.Address(p.User), p.Added.Format("2 Jan 2006"))
		}
		return b.String(), nil
	default:
		key, err := contract.AddressKey(arg)
		if err != nil {
			return "Say revoke and a number (+15551234567) or <channel>:<id> (telegram:<chat id>, slack:<user id>).", nil
		}
		if err := d.pairing.Revoke(ctx, key); errors.Is(err, contract.ErrNotPaired) {
			return "Nobody paired in as " + arg + ". Reply people to see who is.", nil
		} else if err != nil {
			return "", err
		}
		return "Revoked " + arg + ": their messages are ignored from now on.", nil
	}
}
