package app

import (
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/media"
	"github.com/textslash/textslash/runner"
)

// Each service checks its own settings (its Config's Validate); this
// process builds their configurations from its settings, has the services
// it runs check them before anything starts, and names its variables in
// what they refuse: a setting's `sets` tag lists the services' settings
// (<service>.<field path>) it goes into.

// ingressConfig is ingress's configuration but for its handles (the web
// chat's sessions).
func (c *config) ingressConfig() ingress.Config {
	return ingress.Config{WebChat: c.Web, PublicURL: c.PublicURL,
		Twilio: c.twilioIngress(), Telegram: c.telegramIngress(), Notion: c.notionIngress()}
}

func (c *config) dispatcherConfig() dispatcher.Config {
	admins, _ := c.admins() // checked by validate
	d := dispatcher.Config{}.Default()
	d.ApprovalTimeout, d.PermissionTimeout = c.Approval, c.Permission
	d.DefaultMode, d.Budgets, d.Location, d.Admins = c.DefaultMode, c.budgets(), c.location(), admins
	d.Agent = c.Agent
	if d.Agent == "" && c.runs(Runner) {
		// The runner of this process picks its agent as AgentOf does; a
		// dispatcher of its own is told TEXTSLASH_AGENT, or takes Claude
		// Code.
		d.Agent = runner.AgentOf(c.runnerConfig())
	}
	return d
}

// runnerConfig is the runner's configuration but for ShotCommand (this
// binary, found when the runner starts). Every setting this process has
// is set over the runner's defaults, a zero too: TEXTSLASH_CONCURRENCY=0
// is refused, not taken for the default.
func (c *config) runnerConfig() runner.Config {
	r := runner.Config{}.Default()
	r.Agent, r.ClaudeBin, r.Workspaces, r.AgentUser = c.Agent, c.ClaudeBin, c.Workspaces, c.AgentUser
	r.Concurrency, r.Timeout, r.IdleExit, r.StopGrace = c.Concurrency, c.Timeout, c.IdleExit, c.StopGrace
	r.Chromium, r.ShotAddr, r.ID = c.Chromium, c.ShotAddr, c.RunnerID
	r.Sandbox, r.PermissionTimeout, r.ShowCost = c.sandbox(), c.Permission, c.ShowCost
	r.Transcriber, r.VoiceMax, r.VoiceGrace = c.transcriber(), c.VoiceMax, c.VoiceGrace
	r.DescribeImages, r.ProjectMaxBytes, r.Snapshots = c.DescribeImages, size(c.ProjectMax), c.Snapshots
	r.SnapshotMax, r.Credentials = size(c.SnapshotMax), c.Credentials
	return r
}

// mediaConfig is media's configuration but for its handle (the signer).
func (c *config) mediaConfig() media.Config {
	m := media.Config{}.Default()
	m.Keep = c.MediaKeep
	return m
}

// egressConfig is egress's configuration but for its handles (the web
// chat's sessions, the link signer).
func (c *config) egressConfig() egress.Config {
	return egress.Config{WebChat: c.Web, Twilio: c.twilioEgress(), Telegram: c.telegramEgress(), Notion: c.notionEgress()}
}

// checks are each service's check of the configuration this process
// gives it.
var checks = map[string]func(*config) error{
	Ingress:    func(c *config) error { return c.ingressConfig().Default().Validate() },
	Dispatcher: func(c *config) error { return c.dispatcherConfig().Validate() },
	Runner:     func(c *config) error { return c.runnerConfig().Validate() },
	Media:      func(c *config) error { return c.mediaConfig().Validate() },
	Egress:     func(c *config) error { return c.egressConfig().Default().Validate() },
}

// validateServices has the services this process runs check their
// settings, and names the variables of those they refuse.
func (c *config) validateServices() error {
	var errs []error
	for _, s := range c.Services {
		errs = append(errs, checks[s](c))
	}
	return explain(errors.Join(errs...))
}

// variables maps a service's setting (<service>.<field path>) to the
// variable that sets it, from the settings' `sets` tags.
var variables = func() map[string]string {
	m := map[string]string{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for f := range t.Fields() {
			if f.Type.Kind() == reflect.Struct && f.Tag.Get("var") == "" {
				walk(f.Type) // the settings embedded
			}
			for s := range strings.SplitSeq(f.Tag.Get("sets"), ",") {
				if s != "" {
					m[s] = f.Tag.Get("var")
				}
			}
		}
	}
	walk(reflect.TypeFor[serveFlags]())
	return m
}()

// explain rewrites the settings the services refuse as this process's
// variables: "runner: Concurrency=0: must be at least 1" becomes
// "TEXTSLASH_CONCURRENCY=0: must be at least 1". Other errors, and settings
// no variable sets, stay as they are. A variable refused twice (ingress
// and egress both need PUBLIC_URL) is said once, as the first said it.
func explain(err error) error {
	if err == nil {
		return nil
	}
	var lines, said []string
	for _, e := range leaves(err) {
		line, v := e.Error(), ""
		var ce *contract.ConfigError
		if errors.As(e, &ce) && variables[ce.Service+"."+ce.Setting] != "" {
			v = variables[ce.Service+"."+ce.Setting]
			line = v
			if ce.Value != "" {
				line += "=" + ce.Value
			}
			line += ": " + ce.Reason
			if ce.Err != nil {
				line += ": " + ce.Err.Error()
			}
		}
		if slices.Contains(lines, line) || (v != "" && slices.Contains(said, v)) {
			continue
		}
		lines, said = append(lines, line), append(said, v)
	}
	return &explained{msg: strings.Join(lines, "\n"), err: err}
}

// leaves are the errors errors.Join put together, a ConfigError being one.
func leaves(err error) []error {
	if _, ok := err.(*contract.ConfigError); ok {
		return []error{err}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var all []error
		for _, e := range j.Unwrap() {
			all = append(all, leaves(e)...)
		}
		return all
	}
	return []error{err}
}

// explained is an error said in this process's words; it still wraps
// what the service said (errors.Is(err, contract.ErrConfig)).
type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }
