package dispatcher_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/configtest"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/natstest"
)

// badConfigs are configurations the dispatcher refuses, with the settings
// (Config field paths) each refusal names.
var badConfigs = map[string]struct {
	cfg      dispatcher.Config
	settings []string
}{
	"negative approval timeout":   {dispatcher.Config{ApprovalTimeout: -time.Second}, []string{"ApprovalTimeout"}},
	"approval timeout under 1s":   {dispatcher.Config{ApprovalTimeout: 500 * time.Millisecond}, []string{"ApprovalTimeout"}},
	"permission timeout under 1s": {dispatcher.Config{PermissionTimeout: 10 * time.Millisecond}, []string{"PermissionTimeout"}},
	"negative person daily":       {dispatcher.Config{Budgets: dispatcher.Budgets{PersonDaily: -1}}, []string{"Budgets.PersonDaily"}},
	"negative person monthly":     {dispatcher.Config{Budgets: dispatcher.Budgets{PersonMonthly: -0.5}}, []string{"Budgets.PersonMonthly"}},
	"negative daily":              {dispatcher.Config{Budgets: dispatcher.Budgets{Daily: -2}}, []string{"Budgets.Daily"}},
	"negative monthly":            {dispatcher.Config{Budgets: dispatcher.Budgets{Monthly: -3}}, []string{"Budgets.Monthly"}},
	"unknown mode":                {dispatcher.Config{DefaultMode: "yolo"}, []string{"DefaultMode"}},
	"admin as a number":           {dispatcher.Config{Admins: []string{"+15551234567"}}, []string{"Admins"}},
	"admin as an address":         {dispatcher.Config{Admins: []string{"telegram:123456789"}}, []string{"Admins"}},
	"admin on whatsapp":           {dispatcher.Config{Admins: []string{"whatsapp.15551234567"}}, []string{"Admins"}},
	"admin on sms":                {dispatcher.Config{Admins: []string{"sms.15551234567"}}, []string{"Admins"}},
	"admin phone not digits":      {dispatcher.Config{Admins: []string{"phone.alice"}}, []string{"Admins"}},
	"admin phone leading zero":    {dispatcher.Config{Admins: []string{"phone.015551234567"}}, []string{"Admins"}},
	"admin not a key":             {dispatcher.Config{Admins: []string{"telegram:123"}}, []string{"Admins"}},
	"admin without id":            {dispatcher.Config{Admins: []string{"web."}}, []string{"Admins"}},
	"admin empty":                 {dispatcher.Config{Admins: []string{""}}, []string{"Admins"}},
	"admin with a space":          {dispatcher.Config{Admins: []string{"web.a b"}}, []string{"Admins"}},
	"two bad admins": {dispatcher.Config{Admins: []string{"web.ok", "+1555", "telegram.1.2"}},
		[]string{"Admins", "Admins"}},
	"several at once": {dispatcher.Config{ApprovalTimeout: time.Millisecond, DefaultMode: "yes", Budgets: dispatcher.Budgets{Daily: -1}},
		[]string{"ApprovalTimeout", "Budgets.Daily", "DefaultMode"}},
}

// New refuses each bad configuration with a ConfigError per bad setting,
// named by its Config field and never by a variable of the binary.
func TestNewRefusesBadConfig(t *testing.T) {
	js := natstest.RunJetStream(t).JS
	for name, tc := range badConfigs {
		t.Run(name, func(t *testing.T) {
			d, err := dispatcher.New(tc.cfg, js, zerolog.Nop())
			if err == nil {
				t.Fatalf("New(%+v): got %v, nil; want an error", tc.cfg, d)
			}
			configtest.Refused(t, err, dispatcher.Config{}, tc.settings...)
		})
	}
}

// Validate, on Default's result, refuses what New refuses: the binary
// checks settings before it has a JetStream to hand New.
func TestValidateRefusesBadConfig(t *testing.T) {
	for name, tc := range badConfigs {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Default().Validate()
			if err == nil {
				t.Fatalf("Validate(%+v): got nil; want an error", tc.cfg.Default())
			}
			configtest.Refused(t, err, dispatcher.Config{}, tc.settings...)
		})
	}
}

// A bad admin is named by its value, so that among several a person sees
// which one to fix.
func TestValidateNamesBadAdmin(t *testing.T) {
	err := dispatcher.Config{Admins: []string{"web.ok", "+15551234567"}}.Default().Validate()
	var ce *contract.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("Validate: got %v; want a *contract.ConfigError", err)
	}
	if ce.Setting != "Admins" || ce.Value != `"+15551234567"` {
		t.Errorf("Validate: got setting %q value %s; want Admins \"+15551234567\"", ce.Setting, ce.Value)
	}
}

// The zero Config, filled in by Default, runs; so do admins of every
// channel, and settings set are kept.
func TestDefaultValidates(t *testing.T) {
	got := dispatcher.Config{}.Default()
	if err := got.Validate(); err != nil {
		t.Fatalf("Config{}.Default().Validate(): got %v; want nil", err)
	}
	want := dispatcher.Config{ApprovalTimeout: contract.ApprovalTimeout, PermissionTimeout: contract.PermissionTimeout,
		DefaultMode: contract.ModeAsk, Location: got.Location}
	if got.Location == nil || got.Location.String() == "Local" {
		t.Errorf("Config{}.Default().Location: %v; want the server's zone by its name", got.Location)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Config{}.Default(): got %+v; want %+v", got, want)
	}
	set := dispatcher.Config{ApprovalTimeout: 2 * time.Second, PermissionTimeout: time.Second, DefaultMode: contract.ModePlan,
		Budgets: dispatcher.Budgets{PersonDaily: 1, PersonMonthly: 2, Daily: 3, Monthly: 4}, Location: time.UTC,
		Admins: []string{"phone.15551234567", "telegram.123456789", "telegram.-1001234567890", "web.admin", "web.a_B-9"}}
	if got := set.Default(); !reflect.DeepEqual(got, set) {
		t.Errorf("Default of a full config: got %+v; want it unchanged %+v", got, set)
	}
	if err := set.Default().Validate(); err != nil {
		t.Errorf("Validate(%+v): got %v; want nil", set, err)
	}
	if _, err := dispatcher.New(set, natstest.RunJetStream(t).JS, zerolog.Nop()); err != nil {
		t.Errorf("New(%+v): got %v; want nil", set, err)
	}
}

// Default returns a copy: the caller's Config, and the slice it holds,
// stay as they were.
func TestDefaultLeavesCaller(t *testing.T) {
	admins := []string{"web.admin"}
	cfg := dispatcher.Config{Admins: admins}
	_ = cfg.Default()
	if cfg.Location != nil || cfg.DefaultMode != "" || cfg.ApprovalTimeout != 0 || cfg.PermissionTimeout != 0 {
		t.Errorf("after Default the caller's config is %+v; want it untouched", cfg)
	}
	if !slices.Equal(admins, []string{"web.admin"}) {
		t.Errorf("after Default the caller's admins are %q; want [web.admin]", admins)
	}
}
