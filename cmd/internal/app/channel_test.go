package app

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A plug-in channel's binary (cmd/slack) needs NATS_URL and the channel's
// token, and says a refused setting of the channel as its variable; the
// services' settings of a shared environment file are not its to check.
func TestChannelSettings(t *testing.T) {
	on := map[string]string{"NATS_URL": "nats://127.0.0.1:4222", "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1",
		"SLACK_ALLOWED": "U0ALICE1,W0BOB", "TEXTSLASH_CONCURRENCY": "-1"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range on {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	var stderr bytes.Buffer
	c, err := parseChannel("slack", nil, envMap(on), &stderr)
	if err != nil {
		t.Fatalf("slack with its settings: %v", err)
	}
	if sc := c.slackChannel(); sc.BotToken != "xoxb-1" || strings.Join(sc.Allowed, ",") != "U0ALICE1,W0BOB" || !sc.SocketMode() {
		t.Errorf("slack.Config %+v; want the settings given", sc)
	}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{with("NATS_URL", ""), "NATS_URL: "},
		{with("SLACK_BOT_TOKEN", ""), "the slack channel is off"},
		{with("SLACK_ALLOWED", "bob"), `SLACK_ALLOWED="bob": `},
		{with("SLACK_APP_TOKEN", "", "SLACK_SIGNING_SECRET", "s"), "PUBLIC_URL: "},
	} {
		if _, err := parseChannel("slack", nil, envMap(tc.env), &stderr); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: %v; want an error starting %q", tc.env, err, tc.want)
		}
	}
	stderr.Reset()
	if _, err := parseChannel("slack", []string{"--help"}, envMap(on), &stderr); !errors.Is(err, errHelp) ||
		!strings.Contains(stderr.String(), "channel-slack") || !strings.Contains(stderr.String(), "($SLACK_APP_TOKEN)") {
		t.Errorf("--help: %v\n%s; want the channel's usage and its settings", err, stderr.String())
	}
}
