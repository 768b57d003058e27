package app

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestAdminsOnChannelsNotRunAreFlagged(t *testing.T) {
	for _, tc := range []struct {
		name    string
		admins  people
		plugins []string // the plug-in channels turned on
		want    []string // the entries flagged
	}{
		{"none", "", nil, nil},
		{"numbers", "+15551234567, +447700900123", nil, nil},
		{"built in", "telegram:123,web:abc", nil, nil},
		{"misspelt", "telegrm:123", nil, []string{"telegrm:123"}},
		{"another case", "Telegram:123", nil, []string{"Telegram:123"}},
		{"plug-in on", "slack:U0123ABCD,discord:42", []string{"discord", "slack"}, nil},
		{"plug-in off", "slack:U0123ABCD", []string{"discord"}, []string{"slack:U0123ABCD"}},
		{"among good ones", "+15551234567, telegrm:123 ,slack:U1, linechat:U9", []string{"slack"}, []string{"telegrm:123", "linechat:U9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, a := range unknownAdmins(tc.admins, tc.plugins) {
				got = append(got, a.entry)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("unknownAdmins(%q, %q) = %q; want %q", tc.admins, tc.plugins, got, tc.want)
			}
		})
	}
}

func TestAdminOnMisspeltChannelIsWarnedAtStart(t *testing.T) {
	c := config{Admins: "+15551234567,telegrm:123", Discord: discordConfig{BotToken: "x"}}
	c.LogFormat = "json"
	var out bytes.Buffer
	c.warnAdmins(newLogger(c, &out))
	line := out.String()
	for _, want := range []string{`"level":"warn"`, `"entry":"telegrm:123"`, `"channel":"telegrm"`,
		`"built_in":["web","whatsapp","sms","telegram"]`, `"plugin_channels":["discord"]`,
		"not a channel this textslash runs; a typo? (fine if a channel of your own serves telegrm)"} {
		if !strings.Contains(line, want) {
			t.Errorf("log %s; want %s in it", line, want)
		}
	}
	if strings.Count(line, "\n") != 1 {
		t.Errorf("log %s; want one line", line)
	}
}
