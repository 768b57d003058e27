package app

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/textslash/textslash/channels/telegram"
	"github.com/textslash/textslash/channels/twilio"
	"github.com/textslash/textslash/channels/webchat"

	"github.com/textslash/textslash/channels/discord"
	"github.com/textslash/textslash/channels/slack"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/configtest"
	"github.com/textslash/textslash/dispatcher"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/media"
	"github.com/textslash/textslash/notion"
	"github.com/textslash/textslash/runner"
	"github.com/textslash/textslash/runner/sandbox"
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
	slackOn := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "SLACK_ALLOWED": "U0ALICE1"}
	if _, err := parseWith(t, nil, slackOn); err != nil {
		t.Errorf("Slack in Socket Mode: %v", err)
	}
	discordOn := map[string]string{"DISCORD_BOT_TOKEN": "MTA5ODc2NTQzMjEwOTg3NjU0Mw.GaBcDe.abcdefghij0123", "DISCORD_ALLOWED": "80351110224678912"}
	if _, err := parseWith(t, nil, discordOn); err != nil {
		t.Errorf("Discord: %v", err)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{with(twilio, "TWILIO_PHONE_NUMBER", "12345"), `TWILIO_PHONE_NUMBER="12345": `},
		{with(twilio, "ALLOWED_PHONE_NUMBERS", "+15550002222,bob"), `ALLOWED_PHONE_NUMBERS="bob": `},
		{with(twilio, "TWILIO_CONTENT_SID_WINDOW", "template"), `TWILIO_CONTENT_SID_WINDOW="template": `},
		{with(telegram, "TELEGRAM_WEBHOOK_SECRET", "short"), "TELEGRAM_WEBHOOK_SECRET: "},
		{with(telegram, "TELEGRAM_ALLOWED_CHATS", "alice"), `TELEGRAM_ALLOWED_CHATS="alice": `},
		{with(slackOn, "SLACK_ALLOWED", "U0ALICE1,alice"), `SLACK_ALLOWED="alice": `},
		{with(slackOn, "SLACK_APP_TOKEN", ""), "SLACK_APP_TOKEN: "},
		{with(slackOn, "SLACK_APP_TOKEN", "", "SLACK_SIGNING_SECRET", "s"), "PUBLIC_URL: "},
		{with(discordOn, "DISCORD_ALLOWED", "80351110224678912,alice"), `DISCORD_ALLOWED="alice": `},
		{map[string]string{"TEXTSLASH_CONCURRENCY": "-1"}, "TEXTSLASH_CONCURRENCY=-1: "},
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
	// Slack runs in textslash serve, or in cmd/slack: not in a service's binary.
	if _, err := parseWith(t, []string{Egress}, with(slackOn, "SLACK_ALLOWED", "alice", "NATS_URL", "nats://127.0.0.1:4222",
		"TEXTSLASH_MEDIA_KEY", good)); err != nil {
		t.Errorf("egress alone refuses Slack's settings: %v", err)
	}
}

// configTypes are the services' Config types.
var configTypes = map[string]reflect.Type{
	Ingress: reflect.TypeFor[ingress.Config](), Dispatcher: reflect.TypeFor[dispatcher.Config](),
	Runner: reflect.TypeFor[runner.Config](), Media: reflect.TypeFor[media.Config](), Egress: reflect.TypeFor[egress.Config](),
	slack.Channel:    reflect.TypeFor[slack.Config](),
	discord.Channel:  reflect.TypeFor[discord.Config](),
	telegram.Channel: reflect.TypeFor[telegram.Config](),
	"twilio":         reflect.TypeFor[twilio.Config](),
	webchatService:   reflect.TypeFor[webchat.Config](),
}

// Every setting's value reaches the services' fields its sets tag names,
// as the service takes it: each setting is given a value of its own (no
// default, no zero), and each field it sets must hold that value.
func TestEverySettingReachesItsServiceFields(t *testing.T) {
	c, err := parseWith(t, nil, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	// sample is the value given to a setting of each type, and want what
	// a field of type to should then hold (nil: the same value, converted).
	type sample struct {
		value any
		want  func(to reflect.Type) any
	}
	samples := map[reflect.Type]sample{
		reflect.TypeFor[bool]():          {true, nil},
		reflect.TypeFor[int]():           {4321, nil},
		reflect.TypeFor[float64]():       {0.75, nil},
		reflect.TypeFor[time.Duration](): {4321 * time.Second, nil},
		reflect.TypeFor[size]():          {size("3M"), func(reflect.Type) any { return int64(3 << 20) }},
		reflect.TypeFor[longReplies]():   {longReplies("truncate"), func(reflect.Type) any { return true }},
		reflect.TypeFor[zone]():          {zone("Europe/Paris"), func(reflect.Type) any { return "Europe/Paris" }},
		reflect.TypeFor[people]():        {people("+15550001234,telegram:42"), func(reflect.Type) any { return []string{"phone.15550001234", "telegram.42"} }},
		reflect.TypeFor[onOff]():         {onOff("on"), func(reflect.Type) any { return "a sandbox" }},
	}
	settings := reflect.ValueOf(&c).Elem()
	text := map[string]string{} // what each string setting was given
	for _, s := range tagged {
		f := settings.FieldByIndex(s.index)
		if f.Kind() == reflect.String && f.Type() == reflect.TypeFor[string]() {
			text[s.name] = "x-" + s.name
			if s.name == "TEXTSLASH_NOTION_PERSON" {
				text[s.name] = "telegram:42" // read into a contract.User
			}
			f.SetString(text[s.name])
			continue
		}
		smp, ok := samples[f.Type()]
		if !ok {
			t.Fatalf("%s: no sample of type %s", s.name, f.Type())
		}
		f.Set(reflect.ValueOf(smp.value))
	}
	// got is what a field holds, in a form compared with want's.
	got := func(v reflect.Value) any {
		if v.Kind() == reflect.Pointer && v.IsNil() {
			return nil
		}
		switch x := v.Interface().(type) {
		case *notion.Client:
			return x.Token
		case contract.User:
			return x.Key()
		case *time.Location:
			return x.String()
		case *sandbox.Sandbox:
			return "a sandbox"
		}
		return v.Interface()
	}
	configs := map[string]any{Ingress: c.ingressConfig(), Dispatcher: c.dispatcherConfig(), Runner: c.runnerConfig(),
		Media: c.mediaConfig(), Egress: c.egressConfig(), slack.Channel: c.slackChannel(),
		discord.Channel: c.discordChannel(), telegram.Channel: c.telegramConfig(), "twilio": c.twilioConfig(),
		webchatService: c.webchatConfig(partEnv{})}
	n := 0
	for _, s := range tagged {
		smp := samples[settings.FieldByIndex(s.index).Type()]
		for _, target := range s.sets {
			service, path, _ := strings.Cut(target, ".")
			v, ok := field(reflect.ValueOf(configs[service]), path)
			if !ok {
				t.Errorf("%s sets %s: no such field in the %s's Config, or under a part left nil", s.name, target, service)
				continue
			}
			var want any
			switch {
			case smp.want != nil:
				want = smp.want(v.Type())
			case text[s.name] != "" && v.Type() == reflect.TypeFor[[]string]():
				want = []string{text[s.name]}
			case s.name == "TEXTSLASH_NOTION_PERSON":
				want = "telegram.42"
			case text[s.name] != "":
				want = text[s.name]
			default:
				want = reflect.ValueOf(smp.value).Convert(v.Type()).Interface()
			}
			if g := got(v); !reflect.DeepEqual(g, want) {
				t.Errorf("%s sets %s: got %v; want %v", s.name, target, fmt.Sprint(g), fmt.Sprint(want))
			}
			n++
		}
	}
	if n < len(variables) {
		t.Errorf("%d fields checked; want %d", n, len(variables))
	}
}
