package ingress_test

import (
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/notion"
	"github.com/textslash/textslash/telegramtest"
)

// binaryVars are the textslash binary's variables: the binary maps
// settings to them, so no error of the service may name them.
var binaryVars = regexp.MustCompile(`TEXTSLASH_|PUBLIC_URL|ALLOWED_PHONE|TWILIO_|TELEGRAM_|NOTION_`)

// secretSetting names the settings whose value no error may show.
var secretSetting = regexp.MustCompile(`Token|Secret`)

// configErrors are the ConfigErrors in err's tree (errors.Join's too).
func configErrors(err error) []*contract.ConfigError {
	switch e := err.(type) {
	case *contract.ConfigError:
		return []*contract.ConfigError{e}
	case interface{ Unwrap() []error }:
		var out []*contract.ConfigError
		for _, err := range e.Unwrap() {
			out = append(out, configErrors(err)...)
		}
		return out
	case interface{ Unwrap() error }:
		return configErrors(e.Unwrap())
	}
	return nil
}

// wantSettings fails t unless err is a refusal of the configuration
// naming exactly the settings given, each a ConfigError of ingress, with
// no value shown for a secret, and none of the binary's variables.
func wantSettings(t *testing.T, err error, settings ...string) {
	t.Helper()
	if !errors.Is(err, contract.ErrConfig) {
		t.Fatalf("got %v; want an error wrapping contract.ErrConfig", err)
	}
	var ce *contract.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v; want a *contract.ConfigError", err)
	}
	if v := binaryVars.FindString(err.Error()); v != "" {
		t.Errorf("%q names the binary's variable %s", err, v)
	}
	var got []string
	for _, e := range configErrors(err) {
		got = append(got, e.Setting)
		if e.Service != "ingress" {
			t.Errorf("%q: service %q; want ingress", e, e.Service)
		}
		if e.Reason == "" || strings.ToLower(e.Reason[:1]) != e.Reason[:1] {
			t.Errorf("%q: reason %q; want one in lower case", e, e.Reason)
		}
		if secretSetting.MatchString(e.Setting) && e.Value != "" {
			t.Errorf("%q shows the secret %s", e, e.Setting)
		}
	}
	slices.Sort(got)
	slices.Sort(settings)
	if !slices.Equal(got, settings) {
		t.Errorf("got settings %q (%v); want %q", got, err, settings)
	}
}

// refused checks cfg is refused for settings both by Default().Validate()
// and by New.
func refused(t *testing.T, new func(ingress.Config) error, cfg ingress.Config, settings ...string) {
	t.Helper()
	wantSettings(t, cfg.Default().Validate(), settings...)
	wantSettings(t, new(cfg), settings...)
}

// withJetStream is New with a real JetStream, for refused.
func withJetStream(t *testing.T) func(ingress.Config) error {
	ns := natstest.RunJetStream(t)
	return func(cfg ingress.Config) error {
		_, err := ingress.New(cfg, ns.JS, zerolog.New(io.Discard))
		return err
	}
}

func TestConfigRefused(t *testing.T) {
	newIngress := withJetStream(t)
	tests := []struct {
		name     string
		cfg      ingress.Config
		settings []string
	}{
		{"negative body cap", ingress.Config{MaxBodyBytes: -1}, []string{"MaxBodyBytes"}},
		{"negative publish timeout", ingress.Config{PublishTimeout: -time.Second}, []string{"PublishTimeout"}},
		{"negative session burst", ingress.Config{NewSessions: ingress.SessionLimit{Burst: -1}}, []string{"NewSessions.Burst"}},
		{"negative session rate", ingress.Config{NewSessions: ingress.SessionLimit{Every: -time.Second}}, []string{"NewSessions.Every"}},
		{"two services at once", ingress.Config{
			Twilio:   &ingress.Twilio{AuthToken: token, PublicURL: publicURL},
			Telegram: &ingress.Telegram{BotToken: telegramtest.Token, Secret: "short", Allowed: []string{"1"}},
		}, []string{"Twilio.Allowed", "Telegram.Secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { refused(t, newIngress, tt.cfg, tt.settings...) })
	}
}

// Config{}.Default(), given what is required, passes Validate, fills in
// and normalises the nested configs, and leaves the caller's alone.
func TestConfigDefault(t *testing.T) {
	tw := &ingress.Twilio{AuthToken: token, PublicURL: publicURL + "/", Allowed: []string{" whatsapp:" + alice + " "}}
	tg := &ingress.Telegram{BotToken: telegramtest.Token, Secret: tgSecret, Allowed: []string{"4242"}, APIURL: "https://tg.example.com/"}
	no := &ingress.Notion{Client: &notion.Client{}, Database: "db", User: notionUser, StatusProperty: "Status", Todo: "To do"}
	cfg := ingress.Config{Twilio: tw, Telegram: tg, Notion: no}
	d := cfg.Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Validate of the defaults: %v", err)
	}
	if d.MaxBodyBytes <= 0 || d.PublishTimeout <= 0 || d.NewSessions.Burst <= 0 || d.NewSessions.Every <= 0 {
		t.Errorf("defaults %+v; want every limit set", d)
	}
	if d.Twilio == tw || d.Telegram == tg || d.Notion == no {
		t.Error("Default returned the caller's nested configs; want copies")
	}
	if d.Twilio.PublicURL != publicURL || d.Twilio.APIURL != "https://api.twilio.com" || !slices.Equal(d.Twilio.Allowed, []string{alice}) {
		t.Errorf("Twilio %+v; want the public URL trimmed, the API's URL set and the number as E.164", *d.Twilio)
	}
	if d.Telegram.APIURL != "https://tg.example.com" {
		t.Errorf("Telegram.APIURL %q; want it trimmed", d.Telegram.APIURL)
	}
	if d.Notion.Every <= 0 {
		t.Errorf("Notion.Every %s; want a default", d.Notion.Every)
	}
	if tw.PublicURL != publicURL+"/" || tw.APIURL != "" || tw.Allowed[0] != " whatsapp:"+alice+" " ||
		tg.APIURL != "https://tg.example.com/" || no.Every != 0 {
		t.Errorf("the caller's configs changed: %+v %+v %+v", *tw, *tg, *no)
	}
	if _, err := ingress.New(cfg, natstest.RunJetStream(t).JS, zerolog.New(io.Discard)); err != nil {
		t.Errorf("New: %v", err)
	}
}
