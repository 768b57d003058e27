package egress_test

import (
	"context"
	"strings"
	"testing"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/natstest"
)

type nopSender struct{}

func (nopSender) Send(context.Context, contract.User, channel.Message) (string, error) {
	return "x", nil
}

// A pusher keeps what it sent in one bucket: the built-in channels' egress
// or a plug-in channel's own egress-<name>, so one pusher carries the
// built-in channels or a single plug-in channel.
func TestPusherCarriesOnePluginChannel(t *testing.T) {
	s := natstest.RunJetStream(t)
	ch := func(name string) egress.Channel {
		return egress.Channel{Name: name, Sender: nopSender{}, MediaURL: func(contract.Image) string { return "" }}
	}
	allow := access.NewAllowlist(nil, nil)
	for _, tt := range []struct {
		chs  []egress.Channel
		fail bool
	}{
		{[]egress.Channel{ch("line")}, false},
		{[]egress.Channel{ch(contract.ChannelWhatsApp), ch(contract.ChannelTelegram)}, false},
		{[]egress.Channel{ch("line"), ch("matrix")}, true},
		{[]egress.Channel{ch("line"), ch(contract.ChannelTelegram)}, true},
	} {
		_, err := egress.NewPusher(s.JS, allow, channel.Retry{}, zerolog.Nop(), tt.chs...)
		if got := err != nil && strings.Contains(err.Error(), "bucket of its own"); got != tt.fail {
			t.Errorf("%d channels starting %s: %v; want refused %t", len(tt.chs), tt.chs[0].Name, err, tt.fail)
		}
	}
}
