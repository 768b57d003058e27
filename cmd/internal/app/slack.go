package app

import (
	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/slack"
)

// slackConfig is the Slack channel's settings (slack.Config, which checks
// them): on when SLACK_BOT_TOKEN is set.
type slackConfig struct {
	BotToken      string `name:"slack-bot-token" var:"SLACK_BOT_TOKEN" sets:"slack.BotToken" help:"Slack app's bot token (xoxb-…, OAuth & Permissions); setting it turns Slack on (docs/channels.md: Slack)"`
	AppToken      string `name:"slack-app-token" var:"SLACK_APP_TOKEN" sets:"slack.AppToken" help:"Slack app-level token (xapp-…, scope connections:write): events come over Socket Mode, no public URL needed; without it, the Events API at PUBLIC_URL/slack/events, checked with SLACK_SIGNING_SECRET"`
	SigningSecret string `name:"slack-signing-secret" var:"SLACK_SIGNING_SECRET" sets:"slack.SigningSecret" help:"Slack app's signing secret (Basic Information), which checks the Events API's requests when SLACK_APP_TOKEN is not set"`
	Allowed       string `name:"slack-allowed" var:"SLACK_ALLOWED" sets:"slack.Allowed" help:"comma-separated Slack user ids (U…, a profile's ⋮ → Copy member ID) that may use textslash; others can pair in with a code"`
	API           string `name:"slack-api-url" var:"TEXTSLASH_SLACK_API_URL" sets:"slack.APIURL" help:"send Slack Web API requests to this base URL instead of https://slack.com/api/ (tests)"`
}

// slackPlugin runs the Slack channel (slack/).
var slackPlugin = plugin{
	on:    func(c *config) bool { return c.Slack.BotToken != "" },
	token: "SLACK_BOT_TOKEN",
	open: func(c *config, log zerolog.Logger) (channel.Channel, error) {
		return slack.New(c.slackChannel(), log)
	},
}

// slackChannel is the Slack channel's configuration (slack.Config) from
// the settings.
func (c *config) slackChannel() slack.Config {
	var sc slack.Config
	c.put(slack.Channel, &sc)
	return sc
}
