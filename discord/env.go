package discord

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// EnvVar is one setting LoadEnv reads.
type EnvVar struct {
	Name, Help string
}

// Env are the variables LoadEnv reads, for a binary's --help.
var Env = []EnvVar{
	{"DISCORD_BOT_TOKEN", "the bot's token, from the Developer Portal's Bot page (Reset Token); required. DISCORD_BOT_TOKEN_FILE: a file holding it"},
	{"DISCORD_ALLOWED", "comma-separated Discord user ids that may use textslash (Developer Mode on, right-click a person, Copy User ID); others are ignored unless they send a pairing code (textslash pair)"},
	{"DISCORD_API_URL", "send REST requests to this base URL instead of https://discord.com (tests, proxies); the gateway is where its GET /gateway points"},
	{"DISCORD_CDN_URLS", "comma-separated bases people's attachments are downloaded from; default https://cdn.discordapp.com,https://media.discordapp.net"},
}

// LoadEnv reads the channel's Config from the environment through getenv
// (os.Getenv): the variables of Env. It does not default or validate (New
// does); an error only for a _FILE that cannot be read.
func LoadEnv(getenv func(string) string) (Config, error) {
	c := Config{
		BotToken: getenv("DISCORD_BOT_TOKEN"),
		Allowed:  list(getenv("DISCORD_ALLOWED")),
		APIURL:   getenv("DISCORD_API_URL"),
		CDNURLs:  list(getenv("DISCORD_CDN_URLS")),
	}
	if path := getenv("DISCORD_BOT_TOKEN_FILE"); path != "" {
		if c.BotToken != "" {
			return Config{}, errors.New("DISCORD_BOT_TOKEN and DISCORD_BOT_TOKEN_FILE: set one")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("DISCORD_BOT_TOKEN_FILE: %w", err)
		}
		c.BotToken = strings.TrimSpace(string(b))
	}
	return c, nil
}

// Enabled reports whether getenv sets the bot's token: the all-in-one runs
// the channel then.
func Enabled(getenv func(string) string) bool {
	return getenv("DISCORD_BOT_TOKEN") != "" || getenv("DISCORD_BOT_TOKEN_FILE") != ""
}

// list is a comma-separated value's items, blanks left out.
func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
