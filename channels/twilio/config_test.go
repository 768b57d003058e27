package twilio_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/twilio"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/configtest"
)

const (
	from      = "+15550000000"
	goodSID   = "AC0123456789abcdef0123456789abcdef"
	goodToken = "fedcba9876543210fedcba9876543210"
)

// good has what Twilio's channels require.
func good() twilio.Config {
	return twilio.Config{AccountSID: goodSID, AuthToken: goodToken, From: from,
		PublicURL: "https://pub.example.com", Allowed: []string{"+15551230001"}}
}

// badConfigs are configurations refused, each with the settings it names
// (all of them, when several are wrong at once).
var badConfigs = []struct {
	name     string
	change   func(*twilio.Config)
	settings []string
}{
	{"missing everything", func(c *twilio.Config) { *c = twilio.Config{} },
		[]string{"AccountSID", "AuthToken", "From", "PublicURL", "Allowed"}},
	{"sid with a space", func(c *twilio.Config) { c.AccountSID = goodSID + " " }, []string{"AccountSID"}},
	{"token quoted", func(c *twilio.Config) { c.AuthToken = `"` + goodToken + `"` }, []string{"AuthToken"}},
	{"token with a line break", func(c *twilio.Config) { c.AuthToken = goodToken + "\n" }, []string{"AuthToken"}},
	{"from not E.164", func(c *twilio.Config) { c.From = "5550000" }, []string{"From"}},
	{"api url not http", func(c *twilio.Config) { c.APIURL = "ftp://api.example.com" }, []string{"APIURL"}},
	{"public url without scheme", func(c *twilio.Config) { c.PublicURL = "pub.example.com" }, []string{"PublicURL"}},
	{"public url with a query", func(c *twilio.Config) { c.PublicURL = "https://pub.example.com/?a=1" }, []string{"PublicURL"}},
	{"content sid", func(c *twilio.Config) { c.WindowContentSID = "HX123" }, []string{"WindowContentSID"}},
	{"allowed not E.164", func(c *twilio.Config) { c.Allowed = []string{"+15551230001", "nope"} }, []string{"Allowed"}},
	{"whatsapp progress negative", func(c *twilio.Config) { c.WhatsApp.ProgressEvery = -time.Second }, []string{"WhatsApp.ProgressEvery"}},
	{"sms progress negative", func(c *twilio.Config) { c.SMS.ProgressEvery = -time.Second }, []string{"SMS.ProgressEvery"}},
	{"sent wait negative", func(c *twilio.Config) { c.SentWait = -time.Second }, []string{"SentWait"}},
	{"retry attempts negative", func(c *twilio.Config) { c.Retry.Attempts = -1 }, []string{"Retry.Attempts"}},
}

// Validate and New refuse each bad configuration, naming its settings,
// and never show the auth token.
func TestConfigRefused(t *testing.T) {
	for _, tc := range badConfigs {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			tc.change(&cfg)
			for _, err := range []error{cfg.Default().Validate(), newErr(cfg)} {
				configtest.Refused(t, err, twilio.Config{}, tc.settings...)
				if strings.Contains(err.Error(), goodToken) {
					t.Errorf("%q shows the auth token", err)
				}
			}
		})
	}
}

func newErr(cfg twilio.Config) error {
	tw, err := twilio.New(cfg, nil, zerolog.Nop())
	if tw != nil {
		return nil
	}
	return err
}

// Default's defaults and normalising; the caller's config is left as it
// was; a defaulted config validates and stays as it is.
func TestConfigDefault(t *testing.T) {
	cfg := good()
	cfg.From, cfg.PublicURL, cfg.Allowed = "whatsapp:"+from, "https://pub.example.com/", []string{"whatsapp:+15551230001"}
	d := cfg.Default()
	if cfg.From != "whatsapp:"+from || cfg.Allowed[0] != "whatsapp:+15551230001" {
		t.Errorf("Default wrote through the caller's config: %+v", cfg)
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"From", d.From, from},
		{"PublicURL", d.PublicURL, "https://pub.example.com"},
		{"Allowed", d.Allowed, []string{"+15551230001"}},
		{"SentWait", d.SentWait, 15 * time.Second},
		{"WhatsApp.ProgressEvery", d.WhatsApp.ProgressEvery, channel.DefaultProgressEvery},
		{"WhatsApp.BodyLimit", d.WhatsApp.BodyLimit, 1600},
		{"WhatsApp.TypingEvery", d.WhatsApp.TypingEvery, 20 * time.Second},
		{"SMS.MaxMedia", d.SMS.MaxMedia, 10},
		{"Retry", d.Retry, channel.Retry{Attempts: 6, Base: time.Second, Max: 30 * time.Second}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v; want %v", c.what, c.got, c.want)
		}
	}
	through := twilio.Config{AccountSID: goodSID, AuthToken: goodToken, MessagingServiceSID: "MG0123",
		PublicURL: "http://localhost:8080", Allowed: []string{"whatsapp:+15551230001"}}
	for _, c := range []twilio.Config{d, through.Default()} {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v", c, err)
		}
		if again := c.Default(); !reflect.DeepEqual(again, c) {
			t.Errorf("Default of a defaulted config changed it:\n%+v\nwant\n%+v", again, c)
		}
	}
}

// The number refused is the one shown.
func TestConfigShowsTheNumberRefused(t *testing.T) {
	cfg := good()
	cfg.Allowed = []string{"555-1234"}
	var ce *contract.ConfigError
	if err := cfg.Default().Validate(); !errors.As(err, &ce) || ce.Value != `"555-1234"` {
		t.Errorf("got %v; want the value \"555-1234\"", err)
	}
}
