package ingress_test

import (
	"io"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract/configtest"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/notion"
)

// refused checks cfg is refused for settings both by Default().Validate()
// and by New.
func refused(t *testing.T, new func(ingress.Config) error, cfg ingress.Config, settings ...string) {
	t.Helper()
	configtest.Refused(t, cfg.Default().Validate(), ingress.Config{}, settings...)
	configtest.Refused(t, new(cfg), ingress.Config{}, settings...)
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
		{"negative publish timeout", ingress.Config{PublishTimeout: -time.Second}, []string{"PublishTimeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { refused(t, newIngress, tt.cfg, tt.settings...) })
	}
}

// Config{}.Default(), given what is required, passes Validate, fills in
// and normalises the nested configs, and leaves the caller's alone.
func TestConfigDefault(t *testing.T) {
	no := &ingress.Notion{Client: &notion.Client{}, Database: "db", User: notionUser, StatusProperty: "Status", Todo: "To do"}
	cfg := ingress.Config{Notion: no}
	d := cfg.Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Validate of the defaults: %v", err)
	}
	if d.PublishTimeout <= 0 {
		t.Errorf("defaults %+v; want every limit set", d)
	}
	if d.Notion == no {
		t.Error("Default returned the caller's nested configs; want copies")
	}
	if d.Notion.Every <= 0 {
		t.Errorf("Notion.Every %s; want a default", d.Notion.Every)
	}
	if no.Every != 0 {
		t.Errorf("the caller's config changed: %+v", *no)
	}
	if _, err := ingress.New(cfg, natstest.RunJetStream(t).JS, zerolog.New(io.Discard)); err != nil {
		t.Errorf("New: %v", err)
	}
}
