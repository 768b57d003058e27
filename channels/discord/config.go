package discord

import (
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/bwmarrin/discordgo"

	"github.com/textslash/textslash/contract"
)

// Channel is the channel's name in contract.User: a person on Discord is
// contract.User{Channel: "discord", ID: <their Discord user id>}.
const Channel = "discord"

// Intents are the gateway intents the bot asks for: messages in servers
// (GUILD_MESSAGES) and in DMs (DIRECT_MESSAGES). Neither is privileged.
// MESSAGE_CONTENT is not asked for: Discord gives a bot the content (and
// attachments) of DMs and of messages that mention it without it, and the
// bot reads no other message.
const Intents = discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages

// Config of the Discord channel (textslash's settings DISCORD_*: the
// all-in-one's and cmd/discord's, cmd/internal/app/discord.go).
type Config struct {
	// BotToken is the bot's token, from the Developer Portal's Bot page
	// (DISCORD_BOT_TOKEN); a leading "Bot " is allowed.
	BotToken string
	// Allowed are the Discord user ids that may use textslash
	// (DISCORD_ALLOWED); others may pair in with a code.
	Allowed []string
	// APIURL replaces https://discord.com for the REST API (tests:
	// discordtest's URL); the gateway's address is what its GET /gateway
	// answers.
	APIURL string
	// CDNURLs are the only places attachments are fetched from (Fetch);
	// default Discord's CDN and media proxy.
	CDNURLs []string
	// MaxMediaBytes caps an attachment fetched; default 25 MiB.
	MaxMediaBytes int64
	// Rules of the channel; zero values take Discord's: 2,000 characters
	// a message, 10 attachments of at most 10 MiB, progress edited every
	// 3 s, "typing…" renewed every 8 s.
	Rules channel.Rules
	// Retry bounds the tries of a failed send (zero: the kit's, 6 tries
	// from 1 s to 30 s; Discord's retry_after is waited at least).
	Retry channel.Retry
	// RequestTimeout bounds one REST request; default 30 s.
	RequestTimeout time.Duration
}

// Discord's limits and defaults.
const (
	defaultAPIURL = "https://discord.com"
	// BodyLimit is the most characters in a message's content.
	BodyLimit = 2000
	// maxAttachments is the most files on one message.
	maxAttachments = 10
	// maxUploadBytes is a bot's upload limit per file outside boosted
	// servers.
	maxUploadBytes = 10 << 20
	// progressEvery: progress edits one message, so it may come often.
	progressEvery = 3 * time.Second
	// typingEvery renews "typing…", which Discord shows for 10 s.
	typingEvery = 8 * time.Second
)

// service names this package in its ConfigErrors.
const service = "discord"

// Default is c with every setting left zero set to its default.
func (c Config) Default() Config {
	c.BotToken = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c.BotToken), "Bot "))
	if c.APIURL == "" {
		c.APIURL = defaultAPIURL
	}
	c.APIURL = strings.TrimSuffix(c.APIURL, "/")
	if len(c.CDNURLs) == 0 {
		c.CDNURLs = []string{"https://cdn.discordapp.com", "https://media.discordapp.net"}
	}
	if c.MaxMediaBytes == 0 {
		c.MaxMediaBytes = 25 << 20
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = 30 * time.Second
	}
	r := &c.Rules
	if r.BodyLimit == 0 {
		r.BodyLimit = BodyLimit
	}
	if r.MaxMedia == 0 {
		r.MaxMedia = maxAttachments
	}
	if r.MaxImageBytes == 0 {
		r.MaxImageBytes = maxUploadBytes
	}
	if r.MaxFileBytes == 0 {
		r.MaxFileBytes = maxUploadBytes
	}
	if r.ProgressEvery == 0 {
		r.ProgressEvery = progressEvery
	}
	if r.TypingEvery == 0 {
		r.TypingEvery = typingEvery
	}
	return c
}

// tokenRE is a bot token's shape: three base64url parts joined by dots.
var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{10,}$`)

// userIDRE is a Discord user id: a snowflake, 17 to 20 digits.
var userIDRE = regexp.MustCompile(`^[0-9]{17,20}$`)

// Validate checks c as it will run (call it on Default's result): nil, or
// every setting refused, each a *contract.ConfigError, joined.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.BotToken == "":
		errs = append(errs, bad("BotToken", nil, "required for Discord (DISCORD_BOT_TOKEN): the token on the Developer Portal's Bot page"))
	case !tokenRE.MatchString(c.BotToken):
		errs = append(errs, bad("BotToken", nil, "not a bot token (DISCORD_BOT_TOKEN): want the three dot-separated parts the Developer Portal's Bot page shows (Reset Token), not the application id or public key"))
	}
	if len(c.Allowed) == 0 {
		errs = append(errs, bad("Allowed", nil, "empty (DISCORD_ALLOWED), so nobody could use textslash; list the Discord user ids that may"))
	}
	for _, id := range c.Allowed {
		if !userIDRE.MatchString(id) {
			errs = append(errs, bad("Allowed", id, "not a Discord user id (DISCORD_ALLOWED): want a number like 80351110224678912 (Developer Mode on, then right-click the person, Copy User ID)"))
		}
	}
	if !contract.BaseURL(c.APIURL) {
		errs = append(errs, bad("APIURL", c.APIURL, "want http(s)://host[:port]"))
	}
	for _, u := range c.CDNURLs {
		if !contract.BaseURL(u) {
			errs = append(errs, bad("CDNURLs", u, "want http(s)://host[:port]"))
		}
	}
	if c.MaxMediaBytes < 1 {
		errs = append(errs, bad("MaxMediaBytes", c.MaxMediaBytes, "must be at least 1"))
	}
	if c.Rules.BodyLimit < 1 || c.Rules.BodyLimit > BodyLimit {
		errs = append(errs, bad("Rules.BodyLimit", c.Rules.BodyLimit, "must be 1 to 2000, Discord's limit"))
	}
	if c.Rules.MaxMedia < 1 || c.Rules.MaxMedia > maxAttachments {
		errs = append(errs, bad("Rules.MaxMedia", c.Rules.MaxMedia, "must be 1 to 10, Discord's attachments per message"))
	}
	if c.RequestTimeout <= 0 {
		errs = append(errs, bad("RequestTimeout", c.RequestTimeout, "must be more than 0s"))
	}
	return errors.Join(errs...)
}

// bad is this package's refusal of setting; value is nil for secrets and
// for settings left empty.
func bad(setting string, value any, reason string) *contract.ConfigError {
	return contract.BadSetting(service, setting, value, reason)
}
