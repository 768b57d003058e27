package access

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
)

// Allowlist is who may talk to textslash, the one answer ingress (whose
// messages it takes) and egress (whom it answers) both ask: the people
// the configuration lists (ALLOWED_PHONE_NUMBERS, each channel's own:
// TELEGRAM_ALLOWED_CHATS) and the people paired in (the people bucket,
// Pairing). A phone number is one person on WhatsApp and SMS alike
// (PersonKey). Until Open has followed the people bucket, only the
// configured lists count.
type Allowlist struct {
	listed map[string]bool // PersonKeys; written by NewAllowlist only
	anyone map[string]bool // channels whose every person is let in (the id "*")
	// keys filters the people bucket's keys followed: a plug-in channel's
	// own (<channel>.>), which is all its NATS user may read; "" all.
	keys   string
	people atomic.Pointer[People]
	opened atomic.Pointer[opened]
}

// opened is what Open found: the people bucket, and the connection the
// pairing service is asked on.
type opened struct {
	people jetstream.KeyValue
	nc     *nats.Conn
}

// NewAllowlist lists the E.164 numbers (WhatsApp and SMS) and the ids
// of the people of other channels (by channel: Telegram's chat ids) the
// configuration allows; the id "*" (channel.Anyone) lets in everyone of
// its channel. An entry that is no person lists nobody: each service's
// Validate refuses it before.
func NewAllowlist(numbers []string, ids map[string][]string) *Allowlist {
	a := &Allowlist{listed: map[string]bool{}, anyone: map[string]bool{}}
	for _, n := range numbers {
		if u, err := contract.PhoneUser(contract.ChannelSMS, n); err == nil {
			a.listed[contract.PersonKey(u)] = true
		}
	}
	for channel, list := range ids {
		a.list(channel, list)
	}
	return a
}

// list lists ids of channel.
func (a *Allowlist) list(channel string, ids []string) {
	for _, id := range ids {
		if id == "*" {
			a.anyone[channel] = true
		} else if u, err := contract.NewUser(channel, id); err == nil {
			a.listed[contract.PersonKey(u)] = true
		}
	}
}

// NewChannelAllowlist lists the people ids allowed on one channel, a
// channel the configuration names by its ids alone (a plug-in channel:
// channel.Channel.Allowed), and follows that channel's people paired in
// alone. An id that is no subject token lists nobody.
func NewChannelAllowlist(channel string, ids []string) *Allowlist {
	a := &Allowlist{listed: map[string]bool{}, anyone: map[string]bool{}, keys: channel + ".>"}
	a.list(channel, ids)
	return a
}

// Open follows the people paired in until ctx ends.
func (a *Allowlist) Open(ctx context.Context, js jetstream.JetStream) error {
	kv, err := js.KeyValue(ctx, contract.BucketPeople)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", contract.BucketPeople, err)
	}
	people, err := watchPeople(ctx, kv, a.keys)
	if err != nil {
		return err
	}
	a.opened.Store(&opened{people: kv, nc: js.Conn()})
	a.people.Store(people)
	return nil
}

// Allows reports whether u may talk to textslash: listed, or paired in as
// far as the watch of the people bucket has seen.
func (a *Allowlist) Allows(u contract.User) bool {
	return a.anyone[u.Channel] || a.listed[contract.PersonKey(u)] || a.people.Load().Has(u)
}

// AllowsNow is Allows, else the people bucket itself: the watch may not
// have seen yet someone paired in a moment ago (the welcome to them is
// sent at once). The error is the bucket's; u is not allowed then.
func (a *Allowlist) AllowsNow(ctx context.Context, u contract.User) (bool, error) {
	if a.Allows(u) {
		return true, nil
	}
	o := a.opened.Load()
	if o == nil {
		return false, nil
	}
	_, err := o.people.Get(ctx, contract.PersonKey(u))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Redeem asks the pairing service (RequestPair) to pair u in if text is
// a pending code; before Open, nobody is.
func (a *Allowlist) Redeem(ctx context.Context, u contract.User, text string) (bool, error) {
	o := a.opened.Load()
	if o == nil {
		return false, nil
	}
	return RequestPair(ctx, o.nc, u, text)
}
