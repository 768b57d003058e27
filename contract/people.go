package contract

import (
	"fmt"
	"strings"
	"time"
)

// Pairing: besides the allowlists in the configuration
// (ALLOWED_PHONE_NUMBERS, TELEGRAM_ALLOWED_CHATS), people may be paired in
// with a short code an operator (`textslash pair`) or an admin (the pair
// keyword) made: the first message of a stranger that is a pending code
// adds them to the people bucket, which access.Allowlist (contract/access) counts
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

func (p *Person) setVersion() { p.V = Version }

func (p *Person) version() int { return p.V }
