package dispatcher

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/textslash/textslash/contract"
)

// service names the dispatcher in its ConfigErrors.
const service = "dispatcher"

// Config of the dispatcher.
type Config struct {
	// ApprovalTimeout ends an unanswered approval request (default 30 min).
	ApprovalTimeout time.Duration
	// PermissionTimeout denies a permission question nobody answered
	// (default 10 min).
	PermissionTimeout time.Duration
	// DefaultMode is the permission mode of people who have not chosen one
	// (contract.ModeAsk, ModeAuto or ModePlan; default ModeAsk).
	DefaultMode string
	// Budgets bound what runs may cost; each job carries what is left.
	Budgets Budgets
	// Location is the time zone of the days and months of costs and
	// budgets; default the server's.
	Location *time.Location
	// Admins may pair people in, list and revoke them: people bucket keys
	// (contract.PersonKey, contract.AddressKey: "phone.15551234567",
	// "telegram.123456789", "slack.U0123ABCD").
	Admins []string
	// Agent is what the runners run, named as their Config.Agent names it:
	// contract.AgentClaude, AgentShell, or a command line; empty: Claude
	// Code. What mode, btw, steer, go, help and status say depends on it.
	Agent string
}

// Default returns the configuration with every setting left zero set to
// its default. It never fails and never checks: Validate does.
func (c Config) Default() Config {
	if c.ApprovalTimeout == 0 {
		c.ApprovalTimeout = contract.ApprovalTimeout
	}
	if c.PermissionTimeout == 0 {
		c.PermissionTimeout = contract.PermissionTimeout
	}
	if c.DefaultMode == "" {
		c.DefaultMode = contract.ModeAsk
	}
	if c.Location == nil || c.Location == time.Local {
		c.Location = serverZone()
	}
	return c
}

// Validate checks the configuration as it will run (Default's result):
// nil, or every bad setting, each a *contract.ConfigError.
func (c Config) Validate() error {
	var errs []error
	// A timer shorter than a second would fire before a person could read
	// the question, let alone answer it.
	if c.ApprovalTimeout < time.Second {
		errs = append(errs, bad("ApprovalTimeout", c.ApprovalTimeout, "must be at least 1s"))
	}
	if c.PermissionTimeout < time.Second {
		errs = append(errs, bad("PermissionTimeout", c.PermissionTimeout, "must be at least 1s"))
	}
	for _, b := range []struct {
		setting string
		usd     float64
	}{
		{"Budgets.PersonDaily", c.Budgets.PersonDaily}, {"Budgets.PersonMonthly", c.Budgets.PersonMonthly},
		{"Budgets.Daily", c.Budgets.Daily}, {"Budgets.Monthly", c.Budgets.Monthly},
	} {
		if b.usd < 0 {
			errs = append(errs, bad(b.setting, b.usd, "must not be negative (0: no limit)"))
		}
	}
	if !slices.Contains(contract.Modes, c.DefaultMode) {
		errs = append(errs, bad("DefaultMode", c.DefaultMode, "want one of "+strings.Join(contract.Modes, ", ")))
	}
	for _, a := range c.Admins {
		if !contract.IsPersonKey(a) {
			errs = append(errs, bad("Admins", a, "not a people key: want phone.<digits> (phone.15551234567) or <channel>.<id> (telegram.<chat id>, slack.<user id>, web.<id>)"))
		}
	}
	return errors.Join(errs...)
}

// bad is the dispatcher's refusal of setting (its field path in Config);
// value is nil for secrets and for settings left empty.
func bad(setting string, value any, reason string) *contract.ConfigError {
	return contract.BadSetting(service, setting, value, reason)
}
