// The state store: each person's contract.UserState in the users bucket,
// read (or taken from memory, known.go) and written by compare-and-set on
// the entry's revision.

package dispatcher

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// load reads a user's state: from memory when this dispatcher knows it
// (then mem is what it knows), else from the bucket. A user never seen is
// idle at revision 0.
func (d *Dispatcher) load(ctx context.Context, u contract.User) (st contract.UserState, rev uint64, mem *knownState, err error) {
	if k, ok := d.known.get(u); ok {
		if err := contract.Decode(k.data, &st); err == nil {
			return st, k.rev, &k, nil
		}
		d.known.forget(u)
	}
	e, err := d.users.Get(ctx, u.Key())
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return contract.UserState{State: contract.StateIdle}, 0, nil, nil
	}
	if err != nil {
		return st, 0, nil, fmt.Errorf("load state: %w", err)
	}
	if err := contract.Decode(e.Value(), &st); err != nil {
		return st, 0, nil, fmt.Errorf("state of %s: %w", u.Key(), err)
	}
	d.known.put(u, e.Value(), e.Revision())
	return st, e.Revision(), nil, nil
}

// save writes a user's state if it is still at revision rev, and returns
// the new revision.
func (d *Dispatcher) save(ctx context.Context, u contract.User, st contract.UserState, rev uint64) (uint64, error) {
	data, err := contract.Encode(&st)
	if err != nil {
		return 0, err
	}
	if rev == 0 {
		rev, err = d.users.Create(ctx, u.Key(), data)
	} else {
		rev, err = d.users.Update(ctx, u.Key(), data, rev)
	}
	if err != nil {
		d.known.forget(u)
		return 0, err
	}
	d.known.put(u, data, rev)
	return rev, nil
}

// conflict reports whether a save lost a race with another writer.
func conflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}
