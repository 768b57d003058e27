package app

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/alecthomas/kong"
)

// Settings are declared once, as the fields of a struct whose tags give
// each its flag (name), environment variable (var), default and help;
// kong reads the command line and the environment into them and writes
// --help. A flag given on the command line wins over its variable.
//
// The variables come from a lookup passed in (os.LookupEnv in the
// binaries, a map in tests), not from kong's own env tag, which reads the
// process's environment.

// lookupEnv finds an environment variable: os.LookupEnv, or a test's map.
type lookupEnv func(name string) (string, bool)

// errHelp is what parse returns when the command line asked for --help,
// which it has written.
var errHelp = errors.New("help shown")

// parse reads args and the variables env finds into target (a pointer to
// a struct of tagged fields). usage is the text --help starts with; vars
// fill ${name} in tags. It returns which flags were given, on the command
// line or in the environment. Variables that do not parse are all
// reported together, as a *badVariables beside the set: their settings
// keep their defaults, so that the caller may go on checking the rest.
func parse(name, usage string, target any, vars kong.Vars, args []string, env lookupEnv, stderr io.Writer) (set map[string]bool, err error) {
	helped := false
	bad := &badVariables{}
	parser, err := kong.New(target, kong.Name(name), kong.Description(usage), vars,
		kong.Writers(stderr, stderr), kong.Exit(func(int) { helped = true }),
		kong.ValueFormatter(helpWithVar), kong.Resolvers(fromEnv(env, bad)),
		kong.ConfigureHelp(kong.HelpOptions{NoExpandSubcommands: true}))
	if err != nil {
		return nil, err // a tag is wrong: a bug, caught by the tests
	}
	ctx, err := parser.Parse(args)
	if helped {
		return nil, errHelp
	}
	if err != nil {
		return nil, err
	}
	set = map[string]bool{}
	for _, p := range ctx.Path {
		if p.Flag != nil {
			set[p.Flag.Name] = true
		}
	}
	if len(bad.errs) > 0 {
		return set, bad
	}
	return set, nil
}

// badVariables are the variables whose values do not parse, each named.
type badVariables struct{ errs []error }

func (b *badVariables) Error() string   { return errors.Join(b.errs...).Error() }
func (b *badVariables) Unwrap() []error { return b.errs }

// fromEnv resolves a flag not given on the command line from its
// variable. A value that does not parse is added to bad, with the
// variable's name, and the flag keeps its default.
func fromEnv(env lookupEnv, bad *badVariables) kong.Resolver {
	return kong.ResolverFunc(func(_ *kong.Context, _ *kong.Path, f *kong.Flag) (any, error) {
		name := f.Tag.Get("var")
		v, ok := env(name)
		if name == "" || !ok {
			return nil, nil
		}
		scan := kong.ScanFromTokens(kong.Token{Type: kong.FlagValueToken, Value: v})
		if err := f.Parse(scan, reflect.New(f.Target.Type()).Elem()); err != nil {
			msg := strings.TrimPrefix(err.Error(), f.ShortSummary()+": ")
			bad.errs = append(bad.errs, fmt.Errorf("%s=%q: %s", name, v, msg))
			return nil, nil
		}
		return v, nil
	})
}

// helpWithVar ends a flag's help with the variable it is read from.
func helpWithVar(v *kong.Value) string {
	if name := v.Tag.Get("var"); name != "" {
		return v.Help + " ($" + name + ")"
	}
	return v.Help
}
