package app

import (
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/egress/notionmirror"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/media"
	"github.com/textslash/textslash/runner"
	"github.com/textslash/textslash/runner/sandbox"
)

// Each service checks its own settings (its Config's Validate); this
// process builds their configurations from its settings, has the services
// it runs check them before anything starts, and names its variables in
// what they refuse. A setting's `sets` tag lists the services' settings
// (<service>.<field path>) it goes into: put copies it there, and explain
// says a refusal of one of them as the variable.

// ingressConfig is ingress's configuration but for its handles (the web
// chat's sessions) and the channels on the port (builtins). By
// hand: which channels are on (a channel left nil
// takes none of its settings), and Notion's client and person, made from
// settings rather than copied.
func (c *config) ingressConfig() ingress.Config {
	var i ingress.Config
	if c.Notion.on() {
		u, _ := notionUser(c.Notion.Person) // checked by validateNotion
		i.Notion = &ingress.Notion{Client: c.Notion.client(), User: u}
	}
	c.put(Ingress, &i)
	return i
}

// dispatcherConfig is the dispatcher's configuration. By hand: the agent
// when TEXTSLASH_AGENT leaves it to the runner of this process.
func (c *config) dispatcherConfig() dispatcher.Config {
	d := dispatcher.Config{}.Default()
	c.put(Dispatcher, &d)
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
// is refused, not taken for the default. By hand: the sandbox, there or
// not (TEXTSLASH_SANDBOX), hiding this process's data from the runs; the
// speech engine, which four settings make one of.
func (c *config) runnerConfig() runner.Config {
	r := runner.Config{}.Default()
	if c.Sandbox == "on" {
		r.Sandbox = &sandbox.Sandbox{Hide: []string{c.Data}}
	}
	r.Transcriber = c.transcriber()
	c.put(Runner, &r)
	return r
}

// mediaConfig is media's configuration but for its handle (the signer).
func (c *config) mediaConfig() media.Config {
	m := media.Config{}.Default()
	c.put(Media, &m)
	return m
}

// egressConfig is egress's configuration but for its handles (the web
// chat's sessions, the link signer) and the channels on the port
// (builtins). By hand: which channels are on, and Notion's
// client.
func (c *config) egressConfig() egress.Config {
	var e egress.Config
	if c.Notion.on() {
		media := c.PublicURL // media runs elsewhere (checked by validateNotion)
		if c.runs(Media) {
			media = c.localURL()
		}
		e.Notion = &notionmirror.Config{Client: c.Notion.client(), MediaURL: media}
	}
	c.put(Egress, &e)
	return e
}

// put sets the fields of cfg (a pointer to service's Config) that the
// settings' sets tags name to the settings' values: as they are into a
// field of their kind (a duration into a duration), a comma-separated
// list split into a []string (ingress.ParseList), a setting of a type of
// its own as its value (settings.go). A field under a part left nil
// (Twilio, WhatsApp being off) takes nothing; the parts themselves and
// the fields no value converts to (a *notion.Client, a contract.User) are
// the callers', by hand.
func (c *config) put(service string, cfg any) {
	from, to := reflect.ValueOf(c).Elem(), reflect.ValueOf(cfg).Elem()
	for _, s := range tagged {
		for _, target := range s.sets {
			path, ok := strings.CutPrefix(target, service+".")
			if !ok {
				continue
			}
			if f, ok := field(to, path); ok {
				if v, ok := convert(from.FieldByIndex(s.index), f.Type()); ok {
					f.Set(v)
				}
			}
		}
	}
}

// field is the field at path ("Twilio.Allowed") in v, a struct; false
// through a nil pointer.
func field(v reflect.Value, path string) (reflect.Value, bool) {
	for name := range strings.SplitSeq(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return v, false
			}
			v = v.Elem()
		}
		v = v.FieldByName(name)
	}
	return v, v.IsValid()
}

// convert is a setting's value v as a field of type t takes it, if it can.
func convert(v reflect.Value, t reflect.Type) (reflect.Value, bool) {
	if s, ok := v.Interface().(setting); ok {
		v = reflect.ValueOf(s.value())
	}
	switch {
	case v.Kind() == t.Kind() && v.Type().ConvertibleTo(t):
		return v.Convert(t), true
	case v.Kind() == reflect.String && t == reflect.TypeFor[[]string]():
		return reflect.ValueOf(ingress.ParseList(v.String())), true
	}
	return reflect.Value{}, false
}

// checks are each service's check of the configuration this process
// gives it.
var checks = map[string]func(*config) error{
	Ingress:    func(c *config) error { return errors.Join(c.ingressConfig().Default().Validate(), c.checkChannels()) },
	Dispatcher: func(c *config) error { return c.dispatcherConfig().Validate() },
	Runner:     func(c *config) error { return c.runnerConfig().Validate() },
	Media:      func(c *config) error { return c.mediaConfig().Validate() },
	Egress:     func(c *config) error { return errors.Join(c.egressConfig().Default().Validate(), c.checkChannels()) },
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

// taggedSetting is a setting with a sets tag.
type taggedSetting struct {
	index []int    // its field in config
	name  string   // its variable
	sets  []string // the services' settings it goes into: <service>.<field path>
}

// tagged are the settings with a sets tag.
var tagged = func() []taggedSetting {
	var all []taggedSetting
	var walk func(reflect.Type, []int)
	walk = func(t reflect.Type, at []int) {
		for f := range t.Fields() {
			index := append(slices.Clone(at), f.Index...)
			if f.Type.Kind() == reflect.Struct && f.Tag.Get("var") == "" {
				walk(f.Type, index) // the settings embedded
			}
			if sets := f.Tag.Get("sets"); sets != "" {
				all = append(all, taggedSetting{index: index, name: f.Tag.Get("var"), sets: strings.Split(sets, ",")})
			}
		}
	}
	walk(reflect.TypeFor[config](), nil)
	return all
}()

// variables maps a service's setting (<service>.<field path>) to the
// variable that sets it.
var variables = func() map[string]string {
	m := map[string]string{}
	for _, s := range tagged {
		for _, target := range s.sets {
			m[target] = s.name
		}
	}
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
