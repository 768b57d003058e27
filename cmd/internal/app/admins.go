package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// unknownAdmin is an entry of TEXTSLASH_ADMINS and its channel.
type unknownAdmin struct{ entry, channel string }

// unknownAdmins are the entries of admins on a channel that is neither
// built in nor one of plugins (the plug-in channels turned on). Such an
// entry is accepted, as a channel of one's own may serve it, but it is as
// likely a misspelt channel (telegrm:123) that makes nobody an admin.
func unknownAdmins(admins people, plugins []string) []unknownAdmin {
	var unknown []unknownAdmin
	for _, a := range strings.Split(string(admins), ",") {
		a = strings.TrimSpace(a)
		if _, err := contract.PhoneUser(contract.ChannelSMS, a); err == nil || a == "" {
			continue
		}
		ch, _, _ := strings.Cut(a, ":")
		if !contract.IsBuiltIn(ch) && !slices.Contains(plugins, ch) {
			unknown = append(unknown, unknownAdmin{entry: a, channel: ch})
		}
	}
	return unknown
}

// warnAdmins warns of each admin on a channel this textslash does not run.
func (c *config) warnAdmins(log zerolog.Logger) {
	on := c.pluginsOn()
	for _, a := range unknownAdmins(c.Admins, on) {
		log.Warn().Str("entry", a.entry).Str("channel", a.channel).
			Strs("built_in", contract.BuiltInChannels).Strs("plugin_channels", on).
			Msg(fmt.Sprintf("TEXTSLASH_ADMINS: not a channel this textslash runs; a typo? (fine if a channel of your own serves %s)", a.channel))
	}
}
