package egress_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/textslash/textslash/contract/configtest"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/egress/notionmirror"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/notion"
)

const (
	goodSID   = "AC0123456789abcdef0123456789abcdef"
	goodToken = "fedcba9876543210fedcba9876543210"
)

// goodConfig has every channel on, each with what it requires.
func goodConfig() egress.Config {
	return egress.Config{
		Twilio: &egress.Twilio{AccountSID: goodSID, AuthToken: goodToken, From: from,
			PublicURL: "https://pub.example.com", Allowed: []string{"+15551230001"}},
		Notion: &notionmirror.Config{Client: &notion.Client{Token: "ntn_x"}, Database: "db", StatusProperty: "Status",
			InProgress: "In progress", Done: "Done", Failed: "Failed", MediaURL: "http://127.0.0.1:8080"},
	}
}

// badConfigs are configurations egress refuses, each with the settings it
// names (all of them, when several are wrong at once).
var badConfigs = []struct {
	name     string
	change   func(*egress.Config)
	settings []string
}{
	{"keep-alive negative", func(c *egress.Config) { c.KeepAlive = -time.Second }, []string{"KeepAlive"}},
	{"twilio missing everything", func(c *egress.Config) { c.Twilio = &egress.Twilio{} },
		[]string{"Twilio.AccountSID", "Twilio.AuthToken", "Twilio.From", "Twilio.PublicURL", "Twilio.Allowed"}},
	{"twilio sid with a space", func(c *egress.Config) { c.Twilio.AccountSID = goodSID + " " }, []string{"Twilio.AccountSID"}},
	{"twilio token quoted", func(c *egress.Config) { c.Twilio.AuthToken = `"` + goodToken + `"` }, []string{"Twilio.AuthToken"}},
	{"twilio token with a line break", func(c *egress.Config) { c.Twilio.AuthToken = goodToken + "\n" }, []string{"Twilio.AuthToken"}},
	{"twilio from not E.164", func(c *egress.Config) { c.Twilio.From = "5550000" }, []string{"Twilio.From"}},
	{"twilio api url not http", func(c *egress.Config) { c.Twilio.APIURL = "ftp://api.example.com" }, []string{"Twilio.APIURL"}},
	{"twilio public url without scheme", func(c *egress.Config) { c.Twilio.PublicURL = "pub.example.com" }, []string{"Twilio.PublicURL"}},
	{"twilio public url with a query", func(c *egress.Config) { c.Twilio.PublicURL = "https://pub.example.com/?a=1" }, []string{"Twilio.PublicURL"}},
	{"twilio content sid", func(c *egress.Config) { c.Twilio.WindowContentSID = "HX123" }, []string{"Twilio.WindowContentSID"}},
	{"twilio allowed not E.164", func(c *egress.Config) { c.Twilio.Allowed = []string{"+15551230001", "nope"} }, []string{"Twilio.Allowed"}},
	{"twilio whatsapp progress negative", func(c *egress.Config) { c.Twilio.WhatsApp.ProgressEvery = -time.Second }, []string{"Twilio.WhatsApp.ProgressEvery"}},
	{"twilio sms progress negative", func(c *egress.Config) { c.Twilio.SMS.ProgressEvery = -time.Second }, []string{"Twilio.SMS.ProgressEvery"}},
	{"twilio sent wait negative", func(c *egress.Config) { c.Twilio.SentWait = -time.Second }, []string{"Twilio.SentWait"}},
	{"twilio retry attempts negative", func(c *egress.Config) { c.Twilio.Retry.Attempts = -1 }, []string{"Twilio.Retry.Attempts"}},
	{"notion missing everything", func(c *egress.Config) { c.Notion = &notionmirror.Config{} },
		[]string{"Notion.Client", "Notion.Database", "Notion.StatusProperty", "Notion.InProgress", "Notion.Done", "Notion.Failed", "Notion.MediaURL"}},
	{"notion media url", func(c *egress.Config) { c.Notion.MediaURL = "media:8080" }, []string{"Notion.MediaURL"}},
	{"notion progress negative", func(c *egress.Config) { c.Notion.ProgressEvery = -time.Second }, []string{"Notion.ProgressEvery"}},
}

func TestValidateRefuses(t *testing.T) {
	for _, tc := range badConfigs {
		t.Run(tc.name, func(t *testing.T) {
			cfg := goodConfig()
			tc.change(&cfg)
			refused(t, cfg.Default().Validate(), tc.settings)
		})
	}
}

// TestNewRefuses: New checks what Validate checks, before it starts
// anything.
func TestNewRefuses(t *testing.T) {
	ns := natstest.RunJetStream(t)
	for _, tc := range badConfigs {
		t.Run(tc.name, func(t *testing.T) {
			cfg := goodConfig()
			tc.change(&cfg)
			cfg.Signer = signer
			e, err := egress.New(cfg, ns.JS, testLog(t))
			if e != nil {
				t.Errorf("New gave an egress with %v", err)
			}
			refused(t, err, tc.settings)
		})
	}
}

func TestDefaultValidates(t *testing.T) {
	for name, cfg := range map[string]egress.Config{
		"nothing on": {},
		"web chat":   {WebChat: true},
		"everything": goodConfig(),
		"twilio through a messaging service": {Twilio: &egress.Twilio{AccountSID: goodSID, AuthToken: goodToken,
			MessagingServiceSID: "MG0123", PublicURL: "http://localhost:8080", Allowed: []string{"whatsapp:+15551230001"}}},
	} {
		t.Run(name, func(t *testing.T) {
			d := cfg.Default()
			if err := d.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if again := d.Default(); !reflect.DeepEqual(again, d) {
				t.Errorf("Default of a defaulted config changed it:\n%+v\nwant\n%+v", again, d)
			}
		})
	}
}

// TestDefault checks Default's defaults and normalising, and that it
// leaves the caller's nested configs as they were.
func TestDefault(t *testing.T) {
	cfg := goodConfig()
	cfg.Twilio.From = "whatsapp:" + from
	cfg.Twilio.PublicURL = "https://pub.example.com/"
	cfg.Twilio.Allowed = []string{"whatsapp:+15551230001"}
	cfg.Notion.MediaURL = "http://127.0.0.1:8080/"
	before := goodConfig()
	before.Twilio.From, before.Twilio.PublicURL, before.Twilio.Allowed = cfg.Twilio.From, cfg.Twilio.PublicURL, slices.Clone(cfg.Twilio.Allowed)
	before.Notion.MediaURL = cfg.Notion.MediaURL

	d := cfg.Default()
	if !reflect.DeepEqual(cfg, before) {
		t.Errorf("Default wrote through the caller's config:\n%+v\nwant\n%+v", cfg, before)
	}
	tw, n := d.Twilio, d.Notion
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"KeepAlive", d.KeepAlive, 15 * time.Second},
		{"Twilio.From", tw.From, from},
		{"Twilio.PublicURL", tw.PublicURL, "https://pub.example.com"},
		{"Twilio.Allowed", tw.Allowed, []string{"+15551230001"}},
		{"Twilio.SentWait", tw.SentWait, 15 * time.Second},
		{"Twilio.WhatsApp.ProgressEvery", tw.WhatsApp.ProgressEvery, channel.DefaultProgressEvery},
		{"Twilio.WhatsApp.BodyLimit", tw.WhatsApp.BodyLimit, 1600},
		{"Twilio.WhatsApp.TypingEvery", tw.WhatsApp.TypingEvery, 20 * time.Second},
		{"Twilio.SMS.MaxMedia", tw.SMS.MaxMedia, 10},
		{"Twilio.Retry", tw.Retry, channel.Retry{Attempts: 6, Base: time.Second, Max: 30 * time.Second}},
		{"Notion.MediaURL", n.MediaURL, "http://127.0.0.1:8080"},
		{"Notion.ProgressEvery", n.ProgressEvery, 30 * time.Second},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v; want %v", c.what, c.got, c.want)
		}
	}
}

// refused checks that err refuses exactly the settings wanted, in egress's
// own words, and shows no auth token.
func refused(t *testing.T, err error, want []string) {
	t.Helper()
	configtest.Refused(t, err, egress.Config{}, want...)
	if strings.Contains(err.Error(), goodToken) {
		t.Errorf("%q shows the auth token", err)
	}
}
