// Package configtest checks services' refusals of their configuration
// (contract.ConfigError) in their tests.
package configtest

import (
	"errors"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
)

// binaryVars are the textslash binary's variables: the binary maps the
// services' settings to them, so no service's error may name them.
var binaryVars = regexp.MustCompile(`TEXTSLASH_|PUBLIC_URL|ALLOWED_PHONE|TWILIO_|TELEGRAM_|NOTION_`)

// secret names the settings whose value no error may show.
var secret = regexp.MustCompile(`Token|Secret|Key`)

// Refused fails t unless err refuses exactly settings (in any order), each
// a ConfigError of cfg's service (its package) naming a field path of
// cfg's type, with a reason in lower case, no secret's value, and none of
// the binary's variables.
func Refused(t testing.TB, err error, cfg any, settings ...string) {
	t.Helper()
	typ := reflect.TypeOf(cfg)
	service := path.Base(typ.PkgPath())
	if !errors.Is(err, contract.ErrConfig) {
		t.Fatalf("got %v; want an error wrapping contract.ErrConfig", err)
	}
	if v := binaryVars.FindString(err.Error()); v != "" {
		t.Errorf("%q names the binary's variable %s; want the Config's field", err, v)
	}
	var got []string
	for _, ce := range configErrors(err) {
		got = append(got, ce.Setting)
		if ce.Service != service {
			t.Errorf("%q: service %q; want %s", ce, ce.Service, service)
		}
		if !IsField(typ, ce.Setting) {
			t.Errorf("%q: %s names no field of %s", ce, ce.Setting, typ)
		}
		if ce.Reason == "" || strings.ToLower(ce.Reason[:1]) != ce.Reason[:1] {
			t.Errorf("%q: reason %q; want one in lower case", ce, ce.Reason)
		}
		if secret.MatchString(ce.Setting) && ce.Value != "" {
			t.Errorf("%q shows the secret %s", ce, ce.Setting)
		}
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(settings))
	if !slices.Equal(got, want) {
		t.Errorf("refused %q (%v); want %q", got, err, want)
	}
}

// configErrors are the ConfigErrors in err's tree, errors.Join's too.
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

// IsField reports whether path ("Twilio.PublicURL") names an exported
// field of t, through structs and pointers to them.
func IsField(t reflect.Type, path string) bool {
	for name := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return false
		}
		f, ok := t.FieldByName(name)
		if !ok || !f.IsExported() {
			return false
		}
		t = f.Type
	}
	return true
}
