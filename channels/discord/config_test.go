package discord_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/textslash/textslash/channels/discord"
	"github.com/textslash/textslash/channels/discord/discordtest"
	"github.com/textslash/textslash/contract"
)

func TestConfigValidate(t *testing.T) {
	ok := discord.Config{BotToken: "Bot " + discordtest.DefaultToken, Allowed: []string{person.ID}}
	for _, c := range []struct {
		name string
		cfg  func(discord.Config) discord.Config
		want string // in the error; "" for none
	}{
		{"ok, Bot prefix allowed", func(c discord.Config) discord.Config { return c }, ""},
		{"no token", func(c discord.Config) discord.Config { c.BotToken = ""; return c }, "BotToken"},
		{"application id for a token", func(c discord.Config) discord.Config { c.BotToken = "1098765432109876543"; return c }, "not a bot token"},
		{"nobody allowed", func(c discord.Config) discord.Config { c.Allowed = nil; return c }, "DISCORD_ALLOWED"},
		{"a name for an id", func(c discord.Config) discord.Config { c.Allowed = []string{"alice"}; return c }, `"alice"`},
		{"over Discord's limit", func(c discord.Config) discord.Config { c.Rules.BodyLimit = 4096; return c }, "Rules.BodyLimit"},
		{"bad API URL", func(c discord.Config) discord.Config { c.APIURL = "discord.com"; return c }, "APIURL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg(ok).Default().Validate()
			var ce *contract.ConfigError
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("Validate: %v; want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ce)):
				t.Fatalf("Validate: %v; want a ConfigError naming %s", err, c.want)
			}
		})
	}
	if got := ok.Default().Rules; got.BodyLimit != 2000 || got.MaxMedia != 10 {
		t.Fatalf("default rules %+v; want 2,000 characters, 10 attachments", got)
	}
}
