package slack

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/textslash/textslash/contract"
)

// Config of the Slack channel. Socket Mode (AppToken set) is the default
// way Slack's events come in: an outgoing websocket, no public URL. Without
// an AppToken, the Events API: Slack POSTs signed requests to
// PublicURL + EventsPath. The variables named here are those of
// textslash's settings (cmd/internal/app), which fill it in.
type Config struct {
	// BotToken (SLACK_BOT_TOKEN, xoxb-…) calls the Web API.
	BotToken string
	// AppToken (SLACK_APP_TOKEN, xapp-…, scope connections:write) opens
	// Socket Mode connections.
	AppToken string
	// SigningSecret (SLACK_SIGNING_SECRET) checks Events API requests.
	SigningSecret string
	// PublicURL (PUBLIC_URL) is where Slack reaches the Events API
	// handler; needed without an AppToken.
	PublicURL string
	// Allowed (SLACK_ALLOWED) are the Slack user ids (U…, W…) that may talk
	// to textslash; others are paired in with a code.
	Allowed []string
	// APIURL replaces https://slack.com/api/ (a fake's, in tests).
	APIURL string
	// MaxFetchBytes caps a file a person sends (16 MiB, as other channels).
	MaxFetchBytes int64
}

// EventsPath is where Slack POSTs events and interactions (button
// presses) in the Events API mode; give PublicURL + EventsPath as both the
// Event Subscriptions and the Interactivity request URL.
const EventsPath = "/slack/events"

// service names this package in its ConfigErrors.
const service = "slack"

// SocketMode reports whether events come over Socket Mode (an AppToken
// is set) rather than the Events API.
func (c Config) SocketMode() bool { return c.AppToken != "" }

// Default is c with its defaults: Slack's API URL (with its trailing
// slash, as slack-go wants it) and MaxFetchBytes.
func (c Config) Default() Config {
	if c.APIURL == "" {
		c.APIURL = "https://slack.com/api/"
	}
	if !strings.HasSuffix(c.APIURL, "/") {
		c.APIURL += "/"
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	if c.MaxFetchBytes == 0 {
		c.MaxFetchBytes = 16 << 20
	}
	return c
}

// userRE is a Slack user id: U or W and capitals and digits.
var userRE = regexp.MustCompile(`^[UW][A-Z0-9]{2,30}$`)

// Validate refuses every wrong setting of c (defaulted) at once, each a
// *contract.ConfigError naming the field and, in its reason, the variable.
func (c Config) Validate() error {
	var errs []error
	bad := func(setting string, value any, reason string) {
		errs = append(errs, contract.BadSetting(service, setting, value, reason))
	}
	if !strings.HasPrefix(c.BotToken, "xoxb-") {
		bad("BotToken", nil, "required: the bot token, xoxb-… (SLACK_BOT_TOKEN; OAuth & Permissions in the app's settings)")
	}
	switch {
	case c.AppToken != "" && !strings.HasPrefix(c.AppToken, "xapp-"):
		bad("AppToken", nil, "not an app-level token: want xapp-… with the connections:write scope (SLACK_APP_TOKEN)")
	case c.AppToken == "" && c.SigningSecret == "":
		bad("AppToken", nil, "required: SLACK_APP_TOKEN (xapp-…) for Socket Mode, or SLACK_SIGNING_SECRET and PUBLIC_URL for the Events API")
	case c.AppToken == "" && c.PublicURL == "":
		bad("PublicURL", nil, "required for the Events API (no SLACK_APP_TOKEN): the URL Slack posts events to, PUBLIC_URL")
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("PublicURL", c.PublicURL, "want https://host[:port] (PUBLIC_URL)")
		}
	}
	if len(c.Allowed) == 0 {
		bad("Allowed", nil, "empty, so nobody could talk to textslash except by pairing; list Slack user ids in SLACK_ALLOWED")
	}
	for _, id := range c.Allowed {
		if !userRE.MatchString(id) {
			bad("Allowed", id, "not a Slack user id: want U… or W… (a profile's ⋮ → Copy member ID) in SLACK_ALLOWED")
		}
	}
	if u, err := url.Parse(c.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		bad("APIURL", c.APIURL, "want http(s)://host/api/")
	}
	if c.MaxFetchBytes < 1 {
		bad("MaxFetchBytes", c.MaxFetchBytes, "must be at least 1")
	}
	return errors.Join(errs...)
}
