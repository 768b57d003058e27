package app

import (
	"github.com/rs/zerolog"
	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/channels/discord"
)

// discordConfig is the Discord channel's settings (discord.Config, which
// checks them): on when DISCORD_BOT_TOKEN is set.
type discordConfig struct {
	BotToken string `name:"discord-bot-token" var:"DISCORD_BOT_TOKEN" sets:"discord.BotToken" help:"Discord bot's token (Developer Portal → Bot → Reset Token); setting it turns Discord on (docs/channels.md: Discord)"`
	Allowed  string `name:"discord-allowed" var:"DISCORD_ALLOWED" sets:"discord.Allowed" help:"comma-separated Discord user ids (Developer Mode on, right-click a person, Copy User ID) that may use textslash; others can pair in with a code"`
	API      string `name:"discord-api-url" var:"DISCORD_API_URL" sets:"discord.APIURL" help:"send Discord REST requests to this base URL instead of https://discord.com (tests, proxies); the gateway is where its GET /gateway points"`
	CDN      string `name:"discord-cdn-urls" var:"DISCORD_CDN_URLS" sets:"discord.CDNURLs" help:"comma-separated bases people's attachments are downloaded from (default https://cdn.discordapp.com,https://media.discordapp.net)"`
}

// discordPlugin runs the Discord channel (discord/): the gateway taking
// people's messages and presses, and the kit delivering their events.
var discordPlugin = plugin{
	on:    func(c *config) bool { return c.Discord.BotToken != "" },
	token: "DISCORD_BOT_TOKEN",
	open: func(c *config, log zerolog.Logger) (channel.Channel, error) {
		return discord.New(c.discordChannel(), log)
	},
}

// discordChannel is the Discord channel's configuration (discord.Config)
// from the settings.
func (c *config) discordChannel() discord.Config {
	var dc discord.Config
	c.put(discord.Channel, &dc)
	return dc
}
