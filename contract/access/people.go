package access

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// pairingCode is what a code is made of: no 0/O or 1/I to misread.
const codeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

const codeLen = 6

// readCode is text as a code, if it can be one (any case, spaces around).
func readCode(text string) (string, bool) {
	c := strings.ToUpper(strings.TrimSpace(text))
	if len(c) != codeLen {
		return "", false
	}
	for _, r := range c {
		if !strings.ContainsRune(codeAlphabet, r) {
			return "", false
		}
	}
	return c, true
}

// Pairing pairs people in and keeps the list of them.
type Pairing struct {
	people, pairing jetstream.KeyValue
}

// OpenPairing opens the people and pairing buckets.
func OpenPairing(ctx context.Context, js jetstream.JetStream) (*Pairing, error) {
	p := &Pairing{}
	var err error
	if p.people, err = js.KeyValue(ctx, contract.BucketPeople); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", contract.BucketPeople, err)
	}
	if p.pairing, err = js.KeyValue(ctx, contract.BucketPairing); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", contract.BucketPairing, err)
	}
	return p, nil
}

// NewCode makes a code valid for PairingTTL, unless PairingPending are
// pending (ErrTooManyCodes); by says who asked for it.
func (p *Pairing) NewCode(ctx context.Context, by string) (string, error) {
	if n, err := p.count(ctx, "code."); err != nil {
		return "", err
	} else if n >= contract.PairingPending {
		return "", fmt.Errorf("%w: %d, valid for an hour each", contract.ErrTooManyCodes, n)
	}
	b := make([]byte, codeLen)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	code := string(b)
	if _, err := p.pairing.Create(ctx, "code."+code, []byte(by)); err != nil {
		return "", fmt.Errorf("pairing code: %w", err)
	}
	return code, nil
}

// count is how many keys of the pairing bucket start with prefix.
func (p *Pairing) count(ctx context.Context, prefix string) (int, error) {
	keys, err := p.pairing.ListKeysFiltered(ctx, prefix+">")
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pairing codes: %w", err)
	}
	n := 0
	for range keys.Keys() {
		n++
	}
	return n, nil
}

// Redeem pairs u in if text is a pending code, using it up; it reports
// whether it did. A stranger's wrong tries are counted, and after
// PairingTries in PairingTTL nothing they send is looked up.
func (p *Pairing) Redeem(ctx context.Context, u contract.User, text string) (bool, error) {
	code, ok := readCode(text)
	if !ok {
		return false, nil
	}
	tries := "tries." + contract.PersonKey(u)
	n := 0
	e, err := p.pairing.Get(ctx, tries)
	switch {
	case err == nil:
		n, _ = strconv.Atoi(string(e.Value()))
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return false, err
	}
	if n >= contract.PairingTries {
		return false, nil
	}
	c, err := p.pairing.Get(ctx, "code."+code)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		_, err = p.pairing.Put(ctx, tries, []byte(strconv.Itoa(n+1)))
		return false, err
	}
	if err != nil {
		return false, err
	}
	// One use: only the delete at the code's revision wins.
	if err := p.pairing.Delete(ctx, "code."+code, jetstream.LastRevision(c.Revision())); err != nil {
		return false, nil
	}
	data, err := contract.Encode(&contract.Person{User: u, Added: time.Now().UTC(), By: string(c.Value())})
	if err != nil {
		return false, err
	}
	if _, err := p.people.Put(ctx, contract.PersonKey(u), data); err != nil {
		return false, fmt.Errorf("pair %s: %w", u.Key(), err)
	}
	return true, nil
}

// List is everybody paired in.
func (p *Pairing) List(ctx context.Context) ([]contract.Person, error) {
	keys, err := p.people.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []contract.Person
	for k := range keys.Keys() {
		e, err := p.people.Get(ctx, k)
		if err != nil {
			continue // revoked meanwhile
		}
		var person contract.Person
		if contract.Decode(e.Value(), &person) == nil {
			out = append(out, person)
		}
	}
	return out, nil
}

// Revoke unpairs the person of key (a PersonKey); ErrNotPaired when
// nobody of that key is paired.
func (p *Pairing) Revoke(ctx context.Context, key string) error {
	if _, err := p.people.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) {
		return contract.ErrNotPaired
	} else if err != nil {
		return err
	}
	return p.people.Delete(ctx, key)
}

// People is the set of people paired in, kept up to date by a watch of
// the bucket: for allowlists checked on every message.
type People struct {
	mu   sync.RWMutex
	keys map[string]bool
}

// watchPeople follows the keys of the people bucket kv that keys filters
// ("" all) until ctx ends. One filter goes in the consumer's create
// request's subject, which a channel's NATS user may be allowed for its
// own people's keys alone.
func watchPeople(ctx context.Context, kv jetstream.KeyValue, keys string) (*People, error) {
	if keys == "" {
		keys = ">"
	}
	w, err := kv.Watch(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", contract.BucketPeople, err)
	}
	ps := &People{keys: map[string]bool{}}
	ready := make(chan struct{})
	go func() {
		defer func() { _ = w.Stop() }()
		first := true
		for e := range w.Updates() {
			if e == nil { // the end of what was there at the start
				if first {
					close(ready)
					first = false
				}
				continue
			}
			ps.mu.Lock()
			ps.keys[e.Key()] = e.Operation() == jetstream.KeyValuePut
			ps.mu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return ps, nil
}

// Has reports whether u is paired in; nil People has nobody.
func (ps *People) Has(u contract.User) bool {
	if ps == nil {
		return false
	}
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.keys[contract.PersonKey(u)]
}
