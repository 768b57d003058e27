package contract

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
)

// Pairing: besides the allowlists in the configuration
// (ALLOWED_PHONE_NUMBERS, TELEGRAM_ALLOWED_CHATS), people may be paired in
// with a short code an operator (`textslash pair`) or an admin (the pair
// keyword) made: the first message of a stranger that is a pending code
// adds them to the people bucket, which Allowlist (allowlist.go) counts
// with the configured lists: ingress and egress both ask it. Anything else
// a stranger sends gets silence.
const (
	BucketPeople  = "people"  // KV: people paired in, by PersonKey
	BucketPairing = "pairing" // KV: pending codes and strangers' wrong tries, expiring
	// PairingTTL is how long a code is valid, and how long wrong tries
	// are remembered.
	PairingTTL = time.Hour
	// PairingPending is how many codes may wait at once.
	PairingPending = 3
	// PairingTries is how many wrong codes one stranger may send in
	// PairingTTL; later ones are not even looked up.
	PairingTries = 5
)

// PeopleBucket holds the people paired in.
func PeopleBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{Bucket: BucketPeople, Description: "people paired in with a code",
		History: 1, Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxBytes: SmallMaxBytes}
}

// PairingBucket holds pending codes and wrong tries; both expire.
func PairingBucket(o Options) jetstream.KeyValueConfig {
	o = o.withDefaults()
	return jetstream.KeyValueConfig{Bucket: BucketPairing, Description: "pairing codes and wrong tries",
		History: 1, TTL: PairingTTL, Storage: jetstream.FileStorage, Replicas: o.Replicas, MaxBytes: SmallMaxBytes}
}

// PersonKey is a user's key in the people bucket: a phone number is one
// person on WhatsApp and SMS alike ("phone.<digits>"); others are
// "<channel>.<id>".
func PersonKey(u User) string {
	if u.Channel == ChannelWhatsApp || u.Channel == ChannelSMS {
		return "phone." + u.ID
	}
	return u.Key()
}

// IsPersonKey reports whether key is one PersonKey makes:
// "phone.<E.164 digits>" (never "whatsapp.…" or "sms.…") or
// "<channel>.<id>" on any other channel, a plug-in channel's
// ("slack.U0123ABCD") too: a misspelt channel cannot be told from one.
func IsPersonKey(key string) bool {
	ch, id, _ := strings.Cut(key, ".")
	var u User
	var err error
	switch ch {
	case "phone":
		u, err = PhoneUser(ChannelSMS, "+"+id)
	case ChannelWhatsApp, ChannelSMS: // their people are "phone"
		return false
	default:
		u, err = NewUser(ch, id)
	}
	return err == nil && PersonKey(u) == key
}

// AddressKey is the PersonKey of an address as people write it: an E.164
// number ("+15551234567", WhatsApp and SMS) or "<channel>:<id>" on any
// other channel ("telegram:<chat id>", a plug-in channel's
// "slack:<user id>"); another address is refused with ErrInvalidUser.
func AddressKey(addr string) (string, error) {
	if u, err := PhoneUser(ChannelSMS, addr); err == nil {
		return PersonKey(u), nil
	}
	ch, id, _ := strings.Cut(addr, ":")
	u, err := NewUser(ch, id)
	if err != nil || ch == ChannelWhatsApp || ch == ChannelSMS || ch == "phone" {
		return "", fmt.Errorf("%w: %q is neither +<number> nor <channel>:<id> (telegram:<chat id>, slack:<user id>)", ErrInvalidUser, addr)
	}
	return PersonKey(u), nil
}

// Address is how a person is named: their number, or telegram:<chat id>.
func Address(u User) string {
	if n, ok := u.Phone(); ok && (u.Channel == ChannelWhatsApp || u.Channel == ChannelSMS) {
		return n
	}
	return u.Channel + ":" + u.ID
}

// Person is a paired person's entry.
type Person struct {
	V     int       `json:"v"`
	User  User      `json:"user"` // as they paired
	Added time.Time `json:"added"`
	By    string    `json:"by"` // who made the code
}

func (p *Person) setVersion()  { p.V = Version }
func (p *Person) version() int { return p.V }

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
	if p.people, err = js.KeyValue(ctx, BucketPeople); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", BucketPeople, err)
	}
	if p.pairing, err = js.KeyValue(ctx, BucketPairing); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", BucketPairing, err)
	}
	return p, nil
}

// NewCode makes a code valid for PairingTTL, unless PairingPending are
// pending (ErrTooManyCodes); by says who asked for it.
func (p *Pairing) NewCode(ctx context.Context, by string) (string, error) {
	if n, err := p.count(ctx, "code."); err != nil {
		return "", err
	} else if n >= PairingPending {
		return "", fmt.Errorf("%w: %d, valid for an hour each", ErrTooManyCodes, n)
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
func (p *Pairing) Redeem(ctx context.Context, u User, text string) (bool, error) {
	code, ok := readCode(text)
	if !ok {
		return false, nil
	}
	tries := "tries." + PersonKey(u)
	n := 0
	e, err := p.pairing.Get(ctx, tries)
	switch {
	case err == nil:
		n, _ = strconv.Atoi(string(e.Value()))
	case !errors.Is(err, jetstream.ErrKeyNotFound):
		return false, err
	}
	if n >= PairingTries {
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
	data, err := Encode(&Person{User: u, Added: time.Now().UTC(), By: string(c.Value())})
	if err != nil {
		return false, err
	}
	if _, err := p.people.Put(ctx, PersonKey(u), data); err != nil {
		return false, fmt.Errorf("pair %s: %w", u.Key(), err)
	}
	return true, nil
}

// List is everybody paired in.
func (p *Pairing) List(ctx context.Context) ([]Person, error) {
	keys, err := p.people.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Person
	for k := range keys.Keys() {
		e, err := p.people.Get(ctx, k)
		if err != nil {
			continue // revoked meanwhile
		}
		var person Person
		if Decode(e.Value(), &person) == nil {
			out = append(out, person)
		}
	}
	return out, nil
}

// Revoke unpairs the person of key (a PersonKey); ErrNotPaired when
// nobody of that key is paired.
func (p *Pairing) Revoke(ctx context.Context, key string) error {
	if _, err := p.people.Get(ctx, key); errors.Is(err, jetstream.ErrKeyNotFound) {
		return ErrNotPaired
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
		return nil, fmt.Errorf("watch %s: %w", BucketPeople, err)
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
func (ps *People) Has(u User) bool {
	if ps == nil {
		return false
	}
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.keys[PersonKey(u)]
}
