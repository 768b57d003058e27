package twilio

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
)

// Config is the configuration of the WhatsApp and SMS channels through
// Twilio, one for both of their sides: the webhooks that take people's
// messages (ingress) and the Messages API that sends them replies
// (egress).
type Config struct {
	// AccountSID and AuthToken authenticate (letters and digits only): the
	// token signs Twilio's webhooks, both send and fetch the files people
	// send.
	AccountSID string
	AuthToken  string
	// From is the sending number in E.164; on WhatsApp it is sent as
	// whatsapp:<From> (contract.TwilioAddress), and it may be written
	// that way too.
	From string
	// MessagingServiceSID sends through a Messaging Service instead of From.
	MessagingServiceSID string
	// APIURL replaces Twilio's API hosts (tests, proxies); empty: Twilio's
	// own (api.twilio.com, where media is fetched from, and the others).
	APIURL string
	// PublicURL is where Twilio reaches textslash, scheme and host (and any
	// path prefix): the URL Twilio signs (the server behind a proxy sees
	// another, so signatures are checked against this one), where it
	// fetches images and posts status callbacks.
	PublicURL string
	// Allowed are the E.164 numbers that may talk to the agent, and be
	// answered: an event for any other number is dropped, whoever
	// published it.
	Allowed []string
	// StatusCallbacks asks Twilio for status callbacks and sends a person's
	// next message only once the previous one is sent (Twilio does not
	// keep consecutive messages in order by itself).
	StatusCallbacks bool
	// SentWait bounds the wait for a status callback; then the next
	// message goes anyway (default 15 s).
	SentWait time.Duration
	// Rules of the WhatsApp and SMS channels; zero values take defaults.
	// WhatsApp shows a typing indicator every 20 s while a run works (a
	// negative TypingEvery: never); SMS has none.
	WhatsApp channel.Rules
	SMS      channel.Rules
	// Retry of failed sends.
	Retry channel.Retry
	// WindowContentSID is an approved WhatsApp template (a Content SID,
	// HX…, sent without variables) that tells a person something waits
	// for them, sent once when a message to them is refused outside
	// WhatsApp's 24-hour window. Either way the refused message is held
	// and sent when they write again.
	WindowContentSID string
}

// Twilio's limits.
const (
	bodyLimit     = 1600
	whatsAppImage = 5 << 20
	// whatsAppDocument: WhatsApp takes documents (files) up to 16 MB.
	whatsAppDocument = 16 << 20
	mmsImage         = 1 << 20
	mmsMedia         = 10
	codeRateLimit    = 20429
	codeOutOfReply   = 63016 // outside WhatsApp's 24-hour customer service window
	// typingEvery: Twilio shows a typing indicator up to 25 s, or until
	// the next message.
	typingEvery = 20 * time.Second
	// sentWait is how long a send waits for the previous message's status
	// callback by default.
	sentWait = 15 * time.Second
	// apiURL is where Twilio's API serves media when APIURL is empty.
	apiURL = "https://api.twilio.com"
)

// Default is c with its defaults: the channels' limits, numbers written
// as WhatsApp addresses made bare (contract.TwilioAddress writes them
// back per channel), in a list of their own (the caller's is left as it
// was), URLs without their trailing slash.
func (c Config) Default() Config {
	c.From, _ = contract.TwilioNumber(c.From)
	c.Allowed = slices.Clone(c.Allowed)
	for i, n := range c.Allowed {
		c.Allowed[i], _ = contract.TwilioNumber(strings.TrimSpace(n))
	}
	c.APIURL, c.PublicURL = contract.TrimURL(c.APIURL), contract.TrimURL(c.PublicURL)
	if c.SentWait == 0 {
		c.SentWait = sentWait
	}
	c.WhatsApp = c.WhatsApp.WithDefaults(channel.Rules{BodyLimit: bodyLimit, MaxMedia: 1, MaxImageBytes: whatsAppImage, MaxFileBytes: whatsAppDocument})
	if c.WhatsApp.TypingEvery == 0 {
		c.WhatsApp.TypingEvery = typingEvery
	}
	c.SMS = c.SMS.WithDefaults(channel.Rules{BodyLimit: bodyLimit, MaxMedia: mmsMedia, MaxImageBytes: mmsImage})
	c.Retry = c.Retry.WithDefaults()
	return c
}

// apiBase is where Twilio's API is reached: APIURL, else Twilio's.
func (c Config) apiBase() string {
	if c.APIURL != "" {
		return c.APIURL
	}
	return apiURL
}

// Validate refuses every setting of c (defaulted) that is wrong, the
// missing ones first, each a *contract.ConfigError of the twilio service.
func (c Config) Validate() error {
	const need = "required for WhatsApp and SMS"
	var errs []error
	for _, s := range []struct {
		setting string
		missing bool
		why     string
	}{
		{"AccountSID", c.AccountSID == "", need},
		{"AuthToken", c.AuthToken == "", need},
		{"From", c.From == "" && c.MessagingServiceSID == "", need + " (or a Messaging Service SID): the number they are sent from"},
		{"PublicURL", c.PublicURL == "", need + ": where Twilio calls textslash, fetches images and posts status callbacks"},
		{"Allowed", len(c.Allowed) == 0, need + ": the numbers that may talk to textslash (none: nobody could)"},
	} {
		if s.missing {
			errs = append(errs, bad(s.setting, nil, s.why))
		}
	}
	return errors.Join(append(errs, c.validateValues()...)...)
}

// validateValues refuses the settings of c that are set but wrong.
func (c Config) validateValues() []error {
	var errs []error
	if c.AccountSID != "" && !contract.TwilioCredential(c.AccountSID) {
		errs = append(errs, bad("AccountSID", c.AccountSID, contract.TwilioCredentialRule))
	}
	if c.AuthToken != "" && !contract.TwilioCredential(c.AuthToken) {
		errs = append(errs, bad("AuthToken", nil, contract.TwilioCredentialRule)) // a secret: never shown
	}
	if _, err := contract.PhoneUser(contract.ChannelSMS, c.From); c.From != "" && err != nil {
		errs = append(errs, bad("From", c.From, "want E.164 like +15551234567"))
	}
	if c.APIURL != "" && !contract.BaseURL(c.APIURL) {
		errs = append(errs, bad("APIURL", c.APIURL, "want http(s)://host[:port]"))
	}
	if c.PublicURL != "" && !contract.BaseURL(c.PublicURL) {
		errs = append(errs, bad("PublicURL", c.PublicURL, "want the http(s)://host[:port] Twilio reaches textslash at, without a query"))
	}
	if c.WindowContentSID != "" && !contentSidRE.MatchString(c.WindowContentSID) {
		errs = append(errs, bad("WindowContentSID", c.WindowContentSID, "want a Content SID, HX and 32 hex digits"))
	}
	for _, n := range c.Allowed {
		if _, err := contract.PhoneUser(contract.ChannelSMS, n); err != nil {
			errs = append(errs, bad("Allowed", n, "not an E.164 number: want one like +15551234567"))
		}
	}
	if c.SentWait < 0 {
		errs = append(errs, bad("SentWait", c.SentWait, "must not be negative"))
	}
	errs = append(errs, c.WhatsApp.Validate(service, "WhatsApp")...)
	errs = append(errs, c.SMS.Validate(service, "SMS")...)
	return append(errs, c.Retry.Validate(service, "Retry")...)
}

// service names the settings of Config in their refusals.
const service = "twilio"

// contentSidRE is a Twilio content's SID.
var contentSidRE = regexp.MustCompile(`^HX[0-9a-fA-F]{32}$`)

// bad is the refusal of setting (its field in Config); value is nil for
// secrets and for settings left empty.
func bad(setting string, value any, reason string) *contract.ConfigError {
	return contract.BadSetting(service, setting, value, reason)
}
