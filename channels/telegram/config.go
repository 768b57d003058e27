package telegram

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
)

// Config is the Telegram channel's configuration, one for both of its
// sides: how the bot's updates come in (a webhook at an https PublicURL,
// else polling), who may talk, and how replies go out.
type Config struct {
	// BotToken receives the updates, sends the replies and fetches the
	// files people send.
	BotToken string
	// APIURL replaces https://api.telegram.org.
	APIURL string
	// PublicURL, when https, is where Telegram reaches textslash: at start
	// the bot's webhook is set to PublicURL+WebhookPath with Secret, and
	// Telegram fetches replies' images from it. Empty (or http, which
	// Telegram refuses for webhooks), the updates are polled for instead
	// (getUpdates): no public URL needed. Empty, images are uploaded, read
	// from LocalURL.
	PublicURL string
	// LocalURL is where the sending side itself reaches the media service,
	// to upload images when PublicURL is empty.
	LocalURL string
	// Secret is the webhook's secret_token: Telegram sends it in
	// X-Telegram-Bot-Api-Secret-Token with every update. Required with an
	// https PublicURL; without one, the webhook is served only when set.
	Secret string
	// Allowed are the chat ids that may talk to the agent, and be
	// answered: an event for any other chat is dropped, whoever published
	// it.
	Allowed []string
	// PollTimeout is how long one getUpdates waits for an update before
	// it comes back empty (whole seconds; 25s when zero). A poller's lease
	// lasts PollTimeout+pollLeaseMargin.
	PollTimeout time.Duration
	// Poller names this process among those that may poll the bot (one
	// polls at a time); the host name when empty. A restart under the same
	// name resumes at once; under another, after the last lease ends.
	Poller string
	// Rules of the channel; zero values take defaults (4,096 characters,
	// media groups of 10, captions of 1,024, progress edits every 3 s,
	// "typing…" shown again every 4 s, a negative TypingEvery: never).
	Rules channel.Rules
	// Retry of failed sends.
	Retry channel.Retry
}

// WebhookPath is where Telegram posts updates.
const WebhookPath = "/telegram/webhook"

// Telegram's limits.
const (
	bodyLimit    = 4096
	captionLimit = 1024
	mediaGroup   = 10
	photoBytes   = 10 << 20
	// documentBytes is the most a bot uploads.
	documentBytes = 50 << 20
	// typingEvery renews "typing…", which Telegram shows for 5 s (or
	// until the bot's next message), before it fades.
	typingEvery = 4 * time.Second
	// progressEvery: progress edits one message, so it may come often.
	progressEvery = 3 * time.Second
	apiURL        = "https://api.telegram.org"
)

// Default is c with its defaults (Telegram's limits, the API's URL, the
// poll's timeout, the host's name) and its URLs without a trailing slash.
func (c Config) Default() Config {
	if c.APIURL == "" {
		c.APIURL = apiURL
	}
	c.APIURL, c.PublicURL, c.LocalURL = contract.TrimURL(c.APIURL), contract.TrimURL(c.PublicURL), contract.TrimURL(c.LocalURL)
	if c.PollTimeout == 0 {
		c.PollTimeout = 25 * time.Second
	}
	if c.Poller == "" {
		c.Poller, _ = os.Hostname()
	}
	if c.Rules.ProgressEvery == 0 {
		c.Rules.ProgressEvery = progressEvery
	}
	if c.Rules.TypingEvery == 0 {
		c.Rules.TypingEvery = typingEvery
	}
	c.Rules = c.Rules.WithDefaults(channel.Rules{BodyLimit: bodyLimit, MaxMedia: mediaGroup, MaxImageBytes: photoBytes, MaxFileBytes: documentBytes})
	c.Rules.DocumentsApart = true // a media group of photos takes no document
	if c.Rules.CaptionLimit == 0 {
		c.Rules.CaptionLimit = captionLimit
	}
	c.Retry = c.Retry.WithDefaults()
	return c
}

// webhook reports whether Telegram posts the updates (an https PublicURL)
// rather than this side polling for them.
func (c Config) webhook() bool { return strings.HasPrefix(c.PublicURL, "https://") }

// Validate refuses every setting of c (defaulted) that is wrong, each a
// *contract.ConfigError of the telegram service, joined.
func (c Config) Validate() error {
	var errs []error
	if c.BotToken == "" {
		errs = append(errs, bad("BotToken", nil, "required for Telegram"))
	}
	switch {
	case c.Secret == "" && c.webhook():
		errs = append(errs, bad("Secret", nil, "required with an https PublicURL (16 or more letters, digits, _ or -): the webhook's secret_token"))
	case c.Secret != "" && !secretRE.MatchString(c.Secret):
		errs = append(errs, bad("Secret", nil, "must have 16 to 256 characters, letters, digits, _ or - (Telegram's secret_token)"))
	}
	if c.PollTimeout < time.Second || c.PollTimeout%time.Second != 0 {
		errs = append(errs, bad("PollTimeout", c.PollTimeout, "must be whole seconds, at least 1s"))
	}
	if c.Poller == "" {
		errs = append(errs, bad("Poller", nil, "empty and no host name to take"))
	}
	if len(c.Allowed) == 0 {
		errs = append(errs, bad("Allowed", nil, "empty, so nobody could use textslash; list the chat ids that may"))
	}
	for _, id := range c.Allowed {
		if _, err := strconv.ParseInt(id, 10, 64); err != nil {
			errs = append(errs, bad("Allowed", id, "not a chat id; want a number like 4242 or -1001234567890"))
		}
	}
	if c.PublicURL == "" && c.LocalURL == "" {
		errs = append(errs, bad("PublicURL", nil, "required for Telegram's images (or the media service's local URL, LocalURL, where they are read to be uploaded)"))
	}
	for _, u := range []struct{ setting, val string }{{"APIURL", c.APIURL}, {"PublicURL", c.PublicURL}, {"LocalURL", c.LocalURL}} {
		if u.val != "" && !contract.BaseURL(u.val) {
			errs = append(errs, bad(u.setting, u.val, "want http(s)://host[:port][/prefix], without a query"))
		}
	}
	errs = append(errs, c.Rules.Validate(Channel, "Rules")...)
	return errors.Join(append(errs, c.Retry.Validate(Channel, "Retry")...)...)
}

// secretRE is what Telegram takes as a webhook's secret_token, at least
// 16 characters long.
var secretRE = regexp.MustCompile(`^[A-Za-z0-9_-]{16,256}$`)

// bad is the refusal of setting (its field in Config); value is nil for
// secrets and for settings left empty.
func bad(setting string, value any, reason string) *contract.ConfigError {
	return contract.BadSetting(Channel, setting, value, reason)
}
