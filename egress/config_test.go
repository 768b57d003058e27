package egress_test

import (
	"reflect"
	"testing"
	"time"

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
		"everything": goodConfig(),
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
	cfg.Notion.MediaURL = "http://127.0.0.1:8080/"
	before := goodConfig()
	before.Notion.MediaURL = cfg.Notion.MediaURL

	d := cfg.Default()
	if !reflect.DeepEqual(cfg, before) {
		t.Errorf("Default wrote through the caller's config:\n%+v\nwant\n%+v", cfg, before)
	}
	n := d.Notion
	for _, c := range []struct {
		what      string
		got, want any
	}{
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

}
