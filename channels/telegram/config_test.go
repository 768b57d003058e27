package telegram_test

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/telegram"
	"github.com/textslash/textslash/contract/configtest"
	"github.com/textslash/textslash/telegramtest"
)

const secret = "telegram-secret-0123456789"

// Bad Telegram settings are refused, each named by its field.
func TestConfigRefused(t *testing.T) {
	tests := []struct {
		name     string
		tg       telegram.Config
		settings []string
	}{
		{"nothing", telegram.Config{}, []string{"BotToken", "Allowed"}},
		{"webhook without a secret", telegram.Config{BotToken: telegramtest.Token, Allowed: []string{"1"}, PublicURL: "https://bot.example.net"}, []string{"Secret"}},
		{"secret Telegram refuses", telegram.Config{BotToken: telegramtest.Token, Secret: "a secret with spaces", Allowed: []string{"1"}}, []string{"Secret"}},
		{"poll timeout not in seconds", telegram.Config{BotToken: telegramtest.Token, Allowed: []string{"1"}, PollTimeout: 1500 * time.Millisecond}, []string{"PollTimeout"}},
		{"no token", telegram.Config{Secret: secret, Allowed: []string{"1"}}, []string{"BotToken"}},
		{"short secret", telegram.Config{BotToken: telegramtest.Token, Secret: "short", Allowed: []string{"1"}}, []string{"Secret"}},
		{"no allowlist", telegram.Config{BotToken: telegramtest.Token, Secret: secret}, []string{"Allowed"}},
		{"bad chat id", telegram.Config{BotToken: telegramtest.Token, Secret: secret, Allowed: []string{"@someone"}}, []string{"Allowed"}},
		{"bad api url", telegram.Config{BotToken: telegramtest.Token, Secret: secret, Allowed: []string{"1"}, APIURL: "ftp://x"}, []string{"APIURL"}},
	}
	good := telegram.Config{BotToken: telegramtest.Token, Allowed: []string{"4242"}, PublicURL: "https://pub.example.com", Secret: secret}
	with := func(change func(*telegram.Config)) telegram.Config {
		c := good
		change(&c)
		return c
	}
	tests = append(tests, []struct {
		name     string
		tg       telegram.Config
		settings []string
	}{
		{"allowed chat empty", with(func(c *telegram.Config) { c.Allowed = []string{"4242", ""} }), []string{"Allowed"}},
		{"public url", with(func(c *telegram.Config) { c.PublicURL = "https://" }), []string{"PublicURL"}},
		{"local url", with(func(c *telegram.Config) { c.LocalURL = "127.0.0.1:8080" }), []string{"LocalURL"}},
		{"progress negative", with(func(c *telegram.Config) { c.Rules.ProgressEvery = -time.Second }), []string{"Rules.ProgressEvery"}},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.tg.PublicURL == "" && tt.tg.LocalURL == "" {
				tt.tg.LocalURL = "http://127.0.0.1:8080" // the media service, for images
			}
			configtest.Refused(t, tt.tg.Default().Validate(), telegram.Config{}, tt.settings...)
			_, err := telegram.New(tt.tg, nil, zerolog.Nop())
			configtest.Refused(t, err, telegram.Config{}, tt.settings...)
		})
	}
}

// Without a public URL nor the media service's local one, images could not
// be sent: refused.
func TestConfigNeedsImages(t *testing.T) {
	c := telegram.Config{BotToken: telegramtest.Token, Allowed: []string{"4242"}}
	configtest.Refused(t, c.Default().Validate(), telegram.Config{}, "PublicURL")
}

// Default's defaults: Telegram's limits, the API's URL, URLs trimmed.
func TestConfigDefault(t *testing.T) {
	d := telegram.Config{BotToken: telegramtest.Token, Allowed: []string{"4242"}, PublicURL: "https://pub.example.com/", Secret: secret}.Default()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	r := d.Rules
	if d.APIURL != "https://api.telegram.org" || d.PublicURL != "https://pub.example.com" || r.ProgressEvery != 3*time.Second ||
		r.CaptionLimit != 1024 || !r.DocumentsApart || r.BodyLimit != 4096 || r.MaxMedia != 10 || d.PollTimeout != 25*time.Second {
		t.Errorf("defaults %+v", d)
	}
	if again := d.Default(); again.APIURL != d.APIURL || again.Rules != d.Rules {
		t.Errorf("Default of a defaulted config changed it: %+v", again)
	}
}
