package channel

import (
	"math/rand/v2"
	"time"

	"github.com/textslash/textslash/contract"
)

// Rules are what a channel allows in one message and how replies are cut.
type Rules struct {
	// BodyLimit is the most characters (UTF-16 code units) in one message.
	BodyLimit int
	// MaxMedia is the most images in one message; the first goes with the
	// text, the rest follow in messages of their own.
	MaxMedia int
	// MaxImageBytes: larger images are left out, with a note.
	MaxImageBytes int
	// MaxFileBytes: larger files (not images) are left out, with a note;
	// default MaxImageBytes.
	MaxFileBytes int
	// DocumentsApart: files go in messages of their own, one each
	// (Message.Document), after the images, never with them; the text
	// goes with the first of them when there is no image. Otherwise files
	// are media like images.
	DocumentsApart bool
	// CaptionLimit, when set, is the most characters that go with images
	// in one message; a longer text is sent on its own before them, and
	// an image's own caption (contract.Image.Caption) is cut to it (else
	// to BodyLimit).
	CaptionLimit int
	// Truncate cuts long replies at TruncateAt characters instead of paging
	// them ("Reply MORE").
	Truncate   bool
	TruncateAt int
	// ProgressEvery is the least time between two progress messages to one
	// person; in between, the latest progress waits and older ones are
	// dropped. Every event still travels on NATS.
	ProgressEvery time.Duration
	// TypingEvery, for a Sender that is a Typer, is how often the typing
	// indicator is shown again while a run works (zero: never shown).
	TypingEvery time.Duration
}

// WithDefaults is r with the limits it leaves zero taken from d, the
// file limit from the image limit when d has none either, and TruncateAt
// within BodyLimit.
func (r Rules) WithDefaults(d Rules) Rules {
	if r.BodyLimit == 0 {
		r.BodyLimit = d.BodyLimit
	}
	if r.MaxMedia == 0 {
		r.MaxMedia = d.MaxMedia
	}
	if r.MaxImageBytes == 0 {
		r.MaxImageBytes = d.MaxImageBytes
	}
	if r.MaxFileBytes == 0 {
		r.MaxFileBytes = d.MaxFileBytes
	}
	if r.MaxFileBytes == 0 {
		r.MaxFileBytes = r.MaxImageBytes
	}
	if r.TruncateAt == 0 || r.TruncateAt > r.BodyLimit {
		r.TruncateAt = max(0, min(1500, r.BodyLimit)) // a BodyLimit below 1 is refused; no second refusal of TruncateAt
	}
	if r.ProgressEvery == 0 {
		r.ProgressEvery = DefaultProgressEvery
	}
	return r
}

// Validate refuses the rules (defaulted) that are wrong, as settings of
// service; path is theirs in its Config ("Twilio.WhatsApp").
func (r Rules) Validate(service, path string) []error {
	var errs []error
	if r.BodyLimit < 1 {
		errs = append(errs, bad(service, path+".BodyLimit", r.BodyLimit, "must be at least 1"))
	}
	if r.MaxMedia < 1 {
		errs = append(errs, bad(service, path+".MaxMedia", r.MaxMedia, "must be at least 1"))
	}
	return append(errs, notNegative(service, path+".MaxImageBytes", r.MaxImageBytes), notNegative(service, path+".MaxFileBytes", r.MaxFileBytes),
		notNegative(service, path+".CaptionLimit", r.CaptionLimit), notNegative(service, path+".TruncateAt", r.TruncateAt),
		notNegative(service, path+".ProgressEvery", r.ProgressEvery))
}

// DefaultProgressEvery is the least time between two progress messages to
// one person on a channel whose Rules set none.
const DefaultProgressEvery = 10 * time.Second

// PluginRules are the limits a Channel leaves zero: 4,000 characters,
// one image per message, 10 MB per image (and per file).
var PluginRules = Rules{BodyLimit: 4000, MaxMedia: 1, MaxImageBytes: 10 << 20}

// Retry bounds the tries of a send that failed for a reason that may pass.
type Retry struct {
	Attempts int           // tries in all; default 6
	Base     time.Duration // first delay, doubled each time, with jitter; default 1s
	Max      time.Duration // longest delay; default 30s
}

// WithDefaults is r with the bounds it leaves zero set to their
// defaults.
func (r Retry) WithDefaults() Retry {
	if r.Attempts == 0 {
		r.Attempts = 6
	}
	if r.Base == 0 {
		r.Base = time.Second
	}
	if r.Max == 0 {
		r.Max = 30 * time.Second
	}
	return r
}

// Validate refuses the bounds (defaulted) that are wrong, as settings of
// service; path is r's in its Config ("Twilio.Retry").
func (r Retry) Validate(service, path string) []error {
	return []error{notNegative(service, path+".Attempts", r.Attempts), notNegative(service, path+".Base", r.Base), notNegative(service, path+".Max", r.Max)}
}

// Delay before try n+1: exponential with full jitter in its upper half.
func (r Retry) Delay(n int) time.Duration {
	d := r.Base << min(n-1, 20)
	if d > r.Max || d <= 0 {
		d = r.Max
	}
	return d/2 + rand.N(d/2+1)
}

// bad is service's refusal of setting (its field path in service's
// Config); value is nil for secrets and for settings left empty.
func bad(service, setting string, value any, reason string) *contract.ConfigError {
	return contract.BadSetting(service, setting, value, reason)
}

// notNegative refuses a setting below zero (zero takes its default).
func notNegative[T int | time.Duration](service, setting string, v T) error {
	if v < 0 {
		return bad(service, setting, v, "must not be negative")
	}
	return nil
}
