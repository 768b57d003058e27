// Package contract is textslash's wire contract: the subjects every service
// publishes and consumes, the payloads carried on them, the headers, and the
// streams, consumers, buckets and object store that hold them.
//
// subjects.md at the repository root documents the same contract for people
// with a `nats` command line to tap each subject; keep the two in step.
package contract

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Version is the payload version written into every message's "v" field.
// A consumer that meets a higher version than it knows terminates the
// message instead of guessing at its meaning.
const Version = 1

// Channels a person can reach textslash on. A channel is the first subject
// token after the kind, so one egress consumer per channel filters its own
// users' events with ts.ev.<channel>.>.
const (
	ChannelWeb      = "web"
	ChannelWhatsApp = "whatsapp"
	ChannelSMS      = "sms"
	ChannelTelegram = "telegram"
)

// BuiltInChannels are the channels textslash's own services carry
// (ingress and egress); any other is a plug-in channel, a program of its
// own with a NATS user of its own (channels.md).
var BuiltInChannels = []string{ChannelWeb, ChannelWhatsApp, ChannelSMS, ChannelTelegram}

// IsBuiltIn reports whether channel is one of BuiltInChannels.
func IsBuiltIn(channel string) bool { return slices.Contains(BuiltInChannels, channel) }

// tokenRE is what a channel or user id may look like: safe as a NATS
// subject token, a KV key part and a directory name at once.
var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// IsToken reports whether s may be a channel or user id (tokenRE).
func IsToken(s string) bool { return tokenRE.MatchString(s) }

// User is one person on one channel: the unit of ordering, state and
// workspace. Dispatcher and runner treat it as opaque; only the channel's
// ingress and egress know how ID maps to an address (a phone number, a chat
// id, a browser session).
type User struct {
	Channel string `json:"channel"`
	ID      string `json:"id"`
}

// NewUser returns the user after checking that both parts are valid subject
// tokens (ErrInvalidUser if not).
func NewUser(channel, id string) (User, error) {
	u := User{Channel: channel, ID: id}
	return u, u.Validate()
}

// Validate reports whether u can be used in subjects and keys: nil, or
// an error wrapping ErrInvalidUser.
func (u User) Validate() error {
	if !tokenRE.MatchString(u.Channel) {
		return fmt.Errorf("%w: channel %q", ErrInvalidUser, u.Channel)
	}
	if !tokenRE.MatchString(u.ID) {
		return fmt.Errorf("%w: id %q", ErrInvalidUser, u.ID)
	}
	return nil
}

// Key is "<channel>.<id>": the user's KV key and the tail of every subject
// about the user.
func (u User) Key() string { return u.Channel + "." + u.ID }

func (u User) String() string { return u.Key() }

// UserFromSubject reads the user out of a subject built by this package
// (ts.<kind>.<channel>.<id>[.<more>]); ErrInvalidUser if it holds none.
func UserFromSubject(subject string) (User, error) {
	parts := strings.Split(subject, ".")
	if len(parts) < 4 || parts[0] != "ts" {
		return User{}, fmt.Errorf("%w: subject %q", ErrInvalidUser, subject)
	}
	return NewUser(parts[2], parts[3])
}

// Subjects' roots. Every subject starts with ts.<kind>.<channel>.<id>.
const (
	SubjectIn    = "ts.in"
	SubjectJob   = "ts.job"
	SubjectQueue = "ts.queue"
	SubjectEv    = "ts.ev"
	SubjectCtl   = "ts.ctl"
	SubjectTimer = "ts.timer"
)

// CancelSubject (core NATS, not stored) tells whichever runner runs the
// user's job named in the payload to stop it now.
func CancelSubject(u User) string { return SubjectCtl + "." + u.Key() + ".cancel" }

// AllCancels is what runners subscribe to.
const AllCancels = SubjectCtl + ".*.*.cancel"

// ApprovalScheduleSubject holds a user's pending approval timeout: a
// JetStream message schedule that fires into ApprovalExpiredSubject.
func ApprovalScheduleSubject(u User) string { return SubjectTimer + "." + u.Key() + ".approval" }

// PermissionScheduleSubject holds the timeout of the permission question a
// user has not answered yet, like ApprovalScheduleSubject.
func PermissionScheduleSubject(u User) string { return SubjectTimer + "." + u.Key() + ".permission" }

// ApprovalExpiredSubject receives the approval and permission timeouts
// when they fire (Timer.Kind tells which).
func ApprovalExpiredSubject(u User) string { return SubjectTimer + "." + u.Key() + ".expired" }

// ScheduleSubject holds one of a user's scheduled messages, id: a
// JetStream message schedule (once, cron or every) that fires into
// ScheduledSubject.
func ScheduleSubject(u User, id string) string { return SubjectTimer + "." + u.Key() + ".sched." + id }

// UserSchedules filters every schedule of one user.
func UserSchedules(u User) string { return SubjectTimer + "." + u.Key() + ".sched.*" }

// ScheduledSubject receives a user's scheduled messages when they fire.
func ScheduledSubject(u User) string { return SubjectTimer + "." + u.Key() + ".run" }

// InboundSubject is where ingress publishes a person's message.
func InboundSubject(u User) string { return SubjectIn + "." + u.Key() }

// InboundFrom checks that a message published on subject is u's: a
// message belongs to the channel it was published on, whose NATS login
// may publish only its own people's subjects, so the person is the one
// the subject names (ts.in.<channel>.<id>), never whom the payload says.
// A payload naming another person is refused with ErrInvalidUser (a
// permanent error: its consumer terminates it).
func InboundFrom(subject string, u User) error {
	if subject == InboundSubject(u) {
		return nil
	}
	return fmt.Errorf("%w: the payload's user %s is not %s, whose subject it was published on", ErrInvalidUser, u.Key(), strings.TrimPrefix(subject, SubjectIn+"."))
}

// JobSubject is where the dispatcher publishes a message that may run now.
func JobSubject(u User) string { return SubjectJob + "." + u.Key() }

// QueueSubject holds a user's messages waiting for the current run to end.
func QueueSubject(u User) string { return SubjectQueue + "." + u.Key() }

// EventSubject is where events about a user's messages are published.
func EventSubject(u User, kind EventKind) string {
	return SubjectEv + "." + u.Key() + "." + string(kind)
}

// ChannelEvents filters every event of one channel's users: what that
// channel's egress consumes.
func ChannelEvents(channel string) string { return SubjectEv + "." + channel + ".>" }

// UserEvents filters every event of one user.
func UserEvents(u User) string { return SubjectEv + "." + u.Key() + ".>" }

// AllEvents filters events of one kind for every user.
func AllEvents(kind EventKind) string { return SubjectEv + ".*.*." + string(kind) }

// Headers.
const (
	// HeaderMsgID is JetStream's deduplication header. Ingress sets it to the
	// provider's message id, so a provider's retry is stored once.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderTrace carries a message's trace id from ingress to egress:
	// ingress makes it (NewTrace), and every service copies it onto what
	// it publishes for the message and logs it as LogTrace.
	HeaderTrace = "Textslash-Trace"
)

// WebSessionCookie names the browser session of a web chat user over
// plain http (localhost): its value is a session WebSessions issued.
// The web chat (channels/webchat) sets it and reads it.
const WebSessionCookie = "ts_web"

// WebSessionCookieHTTPS names the session over https: a __Host- cookie,
// which the browser keeps to the chat's host alone (Secure, Path=/, no
// Domain), so a cookie that a page of a sibling host (a preview app) sets
// for the shared domain cannot stand in for it.
const WebSessionCookieHTTPS = "__Host-" + WebSessionCookie

// PhoneUser is the user of a phone number on a phone channel (WhatsApp,
// SMS). The number is E.164 ("+15551234567"), optionally a Twilio
// address ("whatsapp:+15551234567", TwilioNumber); the user's ID is its
// digits. Another number is refused with ErrInvalidUser.
func PhoneUser(channel, number string) (User, error) {
	n, _ := TwilioNumber(number)
	if !e164RE.MatchString(n) {
		return User{}, fmt.Errorf("%w: %q is not an E.164 phone number", ErrInvalidUser, number)
	}
	return NewUser(channel, n[1:])
}

// Phone is the E.164 number of a user made by PhoneUser.
func (u User) Phone() (string, bool) {
	n := "+" + u.ID
	return n, e164RE.MatchString(n)
}

// twilioWhatsApp starts a Twilio address on WhatsApp; on SMS an address
// is the bare number.
const twilioWhatsApp = "whatsapp:"

// TwilioAddress is Twilio's address of a phone number on channel:
// "whatsapp:+15551234567" on WhatsApp, "+15551234567" on SMS. The number
// may be written either way (TWILIO_PHONE_NUMBER=whatsapp:+1…), never
// gaining a second prefix.
func TwilioAddress(channel, number string) string {
	n, _ := TwilioNumber(number)
	if channel == ChannelWhatsApp {
		return twilioWhatsApp + n
	}
	return n
}

// TwilioNumber is the phone number of a Twilio address, without its
// "whatsapp:" prefix, and whether it had one (a WhatsApp address).
func TwilioNumber(addr string) (number string, whatsapp bool) {
	return strings.CutPrefix(addr, twilioWhatsApp)
}

// TwilioUser is the user behind a Twilio address: on WhatsApp for
// "whatsapp:+1…", on SMS for "+1…".
func TwilioUser(addr string) (User, error) {
	if _, whatsapp := TwilioNumber(addr); whatsapp {
		return PhoneUser(ChannelWhatsApp, addr)
	}
	return PhoneUser(ChannelSMS, addr)
}

// e164RE: a plus and up to 15 digits, no leading zero.
var e164RE = regexp.MustCompile(`^\+[1-9][0-9]{1,14}$`)

// HeldKey is the key, in the egress bucket, of the messages egress holds
// for u until they write again: those the provider refused outside u's
// reply window (WhatsApp's 24 hours), and those behind them. Ingress reads
// it (a direct get) to tell egress when u writes (KindWindow).
func HeldKey(u User) string { return "held." + u.Key() }

// MediaPath is the URL path media serves an image at, or a file (an Image
// that is not an image) under its name, which is what WhatsApp shows as a
// document's name.
func MediaPath(img Image) string {
	if !IsImage(img.ContentType) {
		return "/files/" + img.ID + "/" + SafeName(img.Name)
	}
	return "/images/" + img.ID + ImageExt(img.ContentType)
}
