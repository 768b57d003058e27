package app

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/configtest"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/media"
	"github.com/textslash/textslash/runner"
)

// A variable's sets tag names fields of the services' Configs: a field
// renamed would leave the services' errors naming a field nobody sets.
func TestEveryVariableSetsServiceSettings(t *testing.T) {
	if len(variables) < 40 {
		t.Fatalf("%d settings set by variables; the sets tags are not read", len(variables))
	}
	for setting, v := range variables {
		service, path, _ := strings.Cut(setting, ".")
		typ, ok := configTypes[service]
		if !ok {
			t.Errorf("%s sets %s: no service %q", v, setting, service)
			continue
		}
		if !configtest.IsField(typ, path) {
			t.Errorf("%s sets %s: no field %s in %s", v, setting, path, typ)
		}
	}
}

// The services check their own settings; the binary asks those it runs
// to, before it starts anything, and says what they refuse in its own
// variables.
func TestConfigServicesCheckTheirSettings(t *testing.T) {
	good := strings.Repeat("a1", 16)
	twilio := map[string]string{"TWILIO_ACCOUNT_SID": "AC" + good, "TWILIO_AUTH_TOKEN": good, "TWILIO_PHONE_NUMBER": "+15550001111",
		"PUBLIC_URL": "https://example.com", "ALLOWED_PHONE_NUMBERS": "+15550002222"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	telegram := map[string]string{"TELEGRAM_BOT_TOKEN": "123:abc", "TELEGRAM_WEBHOOK_SECRET": "a-secret-of-16-chars", "TELEGRAM_ALLOWED_CHATS": "42"}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{with(twilio, "TWILIO_PHONE_NUMBER", "12345"), `TWILIO_PHONE_NUMBER="12345": `},
		{with(twilio, "ALLOWED_PHONE_NUMBERS", "+15550002222,bob"), `ALLOWED_PHONE_NUMBERS="bob": `},
		{with(twilio, "TWILIO_CONTENT_SID_WINDOW", "template"), `TWILIO_CONTENT_SID_WINDOW="template": `},
		{with(telegram, "TELEGRAM_WEBHOOK_SECRET", "short"), "TELEGRAM_WEBHOOK_SECRET: "},
		{with(telegram, "TELEGRAM_ALLOWED_CHATS", "alice"), `TELEGRAM_ALLOWED_CHATS="alice": `},
		{map[string]string{"TEXTSLASH_CONCURRENCY": "0"}, "TEXTSLASH_CONCURRENCY=0: "},
		{map[string]string{"TEXTSLASH_RUN_PIDS": "3"}, "TEXTSLASH_RUN_PIDS=3: "},
		{map[string]string{"TEXTSLASH_PROJECT_MAX": "0"}, "TEXTSLASH_PROJECT_MAX=0: "},
		{map[string]string{"TEXTSLASH_APPROVAL_TIMEOUT": "0s"}, "TEXTSLASH_APPROVAL_TIMEOUT=0s: "},
		{map[string]string{"TEXTSLASH_MEDIA_KEEP": "0"}, "TEXTSLASH_MEDIA_KEEP=0: "},
		{map[string]string{"TEXTSLASH_BUDGET_DAILY": "-1"}, "TEXTSLASH_BUDGET_DAILY=-1: "},
	} {
		_, err := parseWith(t, nil, tc.env)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, contract.ErrConfig) {
			t.Errorf("%v: error %v; want a refusal starting %q", tc.env, err, tc.want)
		}
	}
	// Everything Twilio lacks, said at once.
	_, err := parseWith(t, nil, map[string]string{"TWILIO_ACCOUNT_SID": "AC" + good})
	for _, v := range []string{"TWILIO_AUTH_TOKEN", "TWILIO_PHONE_NUMBER", "PUBLIC_URL", "ALLOWED_PHONE_NUMBERS"} {
		if err == nil || !strings.Contains("\n"+err.Error(), "\n"+v+": ") {
			t.Errorf("only TWILIO_ACCOUNT_SID: error %v; want a line naming %s", err, v)
		}
	}
	// Settings of services another process runs are not this one's to refuse.
	env := with(twilio, "TWILIO_PHONE_NUMBER", "12345", "TEXTSLASH_MEDIA_KEEP", "0", "NATS_URL", "nats://127.0.0.1:4222")
	if _, err := parseWith(t, []string{Runner}, env); err != nil {
		t.Errorf("the runner alone refuses egress's and media's settings: %v", err)
	}
}

// configTypes are the services' Config types.
var configTypes = map[string]reflect.Type{
	Ingress: reflect.TypeFor[ingress.Config](), Dispatcher: reflect.TypeFor[dispatcher.Config](),
	Runner: reflect.TypeFor[runner.Config](), Media: reflect.TypeFor[media.Config](), Egress: reflect.TypeFor[egress.Config](),
}
