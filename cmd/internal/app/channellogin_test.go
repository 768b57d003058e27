package app

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The login textslash serve makes for a plug-in channel has the rights of
// nats.conf's template, no more and no fewer: the channel-slack user and
// the commented channel-<name> template say the same as channelPermissions.
func TestChannelLoginIsTheTemplate(t *testing.T) {
	conf, err := os.ReadFile("../../../nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	// The template's lines, uncommented.
	template := regexp.MustCompile(`(?m)^\s*#\s?`).ReplaceAllString(string(conf), "")
	for _, tt := range []struct {
		conf, name string
	}{
		{string(conf), "slack"},
		{string(conf), "discord"},
		{template, "<name>"},
	} {
		block := userBlock(t, tt.conf, "channel-"+tt.name)
		want := channelPermissions(tt.name)
		if got := quoted(t, block, "publish"); !sameSet(got, want.Publish.Allow) {
			t.Errorf("channel-%s's publish rights in nats.conf:\n%q\nwant channelPermissions':\n%q", tt.name, got, want.Publish.Allow)
		}
		if got := quoted(t, block, "subscribe"); !sameSet(got, want.Subscribe.Allow) {
			t.Errorf("channel-%s's subscribe rights in nats.conf: %q; want %q", tt.name, got, want.Subscribe.Allow)
		}
		if !strings.Contains(block, "allow_responses: true") || want.Response == nil {
			t.Errorf("channel-%s: answers the media fetches in nats.conf and channelPermissions both", tt.name)
		}
	}
}

// userBlock is the text of user's entry in conf, from its name to its
// allow_responses line.
func userBlock(t *testing.T, conf, user string) string {
	t.Helper()
	i := strings.Index(conf, "user: "+user+",")
	if i < 0 {
		t.Fatalf("nats.conf has no user %s", user)
	}
	rest := conf[i:]
	if j := strings.Index(rest, "allow_responses"); j >= 0 {
		return rest[:j+len("allow_responses: true")]
	}
	return rest
}

// quoted are the quoted subjects of the list key: [...] in block.
func quoted(t *testing.T, block, key string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?s)` + key + `: \[(.*?)\]`).FindStringSubmatch(block)
	if m == nil {
		t.Fatalf("no %s list in %s", key, block)
	}
	var out []string
	for _, q := range regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(m[1], -1) {
		out = append(out, q[1])
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
