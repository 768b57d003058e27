package contract

import (
	"context"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
)

// Allowlist is who may talk to textslash, the one answer ingress (whose
// messages it takes) and egress (whom it answers) both ask: the people
// the configuration lists (ALLOWED_PHONE_NUMBERS, TELEGRAM_ALLOWED_CHATS)
// and the people paired in (the people bucket, Pairing). A phone number
// is one person on WhatsApp and SMS alike (PersonKey). Until Open has
// followed the people bucket, only the configured lists count.
type Allowlist struct {
	listed  map[string]bool // PersonKeys; written by NewAllowlist only
	people  atomic.Pointer[People]
	pairing atomic.Pointer[Pairing]
}

// NewAllowlist lists the E.164 numbers (WhatsApp and SMS) and the
// Telegram chat ids the configuration allows. An entry that is neither
// lists nobody: each service's Validate refuses it before.
func NewAllowlist(numbers, chats []string) *Allowlist {
	a := &Allowlist{listed: map[string]bool{}}
	for _, n := range numbers {
		if u, err := PhoneUser(ChannelSMS, n); err == nil {
			a.listed[PersonKey(u)] = true
		}
	}
	for _, id := range chats {
		if u, err := NewUser(ChannelTelegram, id); err == nil {
			a.listed[PersonKey(u)] = true
		}
	}
	return a
}

// NewChannelAllowlist lists the people ids allowed on one channel, a
// channel the configuration names by its ids alone (a plug-in channel:
// kit.Channel.Allowed). An id that is no subject token lists nobody.
func NewChannelAllowlist(channel string, ids []string) *Allowlist {
	a := &Allowlist{listed: map[string]bool{}}
	for _, id := range ids {
		if u, err := NewUser(channel, id); err == nil {
			a.listed[PersonKey(u)] = true
		}
	}
	return a
}

// Open follows the people paired in until ctx ends.
func (a *Allowlist) Open(ctx context.Context, js jetstream.JetStream) error {
	p, err := OpenPairing(ctx, js)
	if err != nil {
		return err
	}
	people, err := WatchPeople(ctx, js)
	if err != nil {
		return err
	}
	a.pairing.Store(p)
	a.people.Store(people)
	return nil
}

// Allows reports whether u may talk to textslash: listed, or paired in as
// far as the watch of the people bucket has seen.
func (a *Allowlist) Allows(u User) bool {
	return a.listed[PersonKey(u)] || a.people.Load().Has(u)
}

// AllowsNow is Allows, else the people bucket itself: the watch may not
// have seen yet someone paired in a moment ago (the welcome to them is
// sent at once). The error is the bucket's; u is not allowed then.
func (a *Allowlist) AllowsNow(ctx context.Context, u User) (bool, error) {
	if a.Allows(u) {
		return true, nil
	}
	p := a.pairing.Load()
	if p == nil {
		return false, nil
	}
	return p.Has(ctx, u)
}

// Redeem pairs u in if text is a pending code (Pairing.Redeem); before
// Open, nobody is.
func (a *Allowlist) Redeem(ctx context.Context, u User, text string) (bool, error) {
	p := a.pairing.Load()
	if p == nil {
		return false, nil
	}
	return p.Redeem(ctx, u, text)
}
