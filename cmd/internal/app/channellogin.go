package app

import (
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/textslash/textslash/contract"
)

// A plug-in channel run as a program of its own against the embedded
// server logs in as channel-<name> (TEXTSLASH_CHANNELS names them), with
// the rights nats.conf's channel-<name> template gives it and nothing
// more, so that what a channel's author runs and tests against is what
// production allows. Its login is kept beside admin's, in
// <data>/nats/channel-<name>.env.

// channelUser is the NATS user of plug-in channel name.
func channelUser(name string) string { return "channel-" + name }

// channelPublish is what a plug-in channel's user may publish: nats.conf's
// template, <name> replaced (TestChannelLoginIsTheTemplate holds the two
// together).
var channelPublish = []string{
	"ts.in.<name>.>", "ts.ev.<name>.*.undelivered", "ts.svc.pair.<name>", "$JS.API.INFO",
	"$JS.API.CONSUMER.CREATE.EVENTS.egress-<name>.ts.ev.<name>.>", "$JS.API.CONSUMER.INFO.EVENTS.egress-<name>",
	"$JS.API.CONSUMER.MSG.NEXT.EVENTS.egress-<name>", "$JS.ACK.EVENTS.egress-<name>.>",
	"$JS.API.STREAM.INFO.KV_egress-<name>", "$KV.egress-<name>.>", "$JS.API.DIRECT.GET.KV_egress-<name>.>",
	"$JS.API.STREAM.INFO.KV_people", "$JS.API.DIRECT.GET.KV_people.$KV.people.<name>.>",
	"$JS.API.CONSUMER.CREATE.KV_people.*.$KV.people.<name>.>", "$JS.API.CONSUMER.DELETE.KV_people.>",
	"$JS.API.STREAM.INFO.OBJ_media-<name>", "$O.media-<name>.>", "$JS.API.DIRECT.GET.OBJ_media-<name>.>",
	"$JS.API.CONSUMER.CREATE.OBJ_media-<name>.>", "$JS.API.CONSUMER.DELETE.OBJ_media-<name>.>", "$JS.FC.OBJ_media-<name>.>",
}

// channelSubscribe is what it may subscribe to.
var channelSubscribe = []string{"_INBOX_channel-<name>.>", "ts.svc.media.fetch.<name>", "$SRV.>"}

// channelPermissions are plug-in channel name's rights.
func channelPermissions(name string) *server.Permissions {
	fill := func(subjects []string) []string {
		out := make([]string, len(subjects))
		for i, s := range subjects {
			out[i] = strings.ReplaceAll(s, "<name>", name)
		}
		return out
	}
	return &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: fill(channelPublish)},
		Subscribe: &server.SubjectPermission{Allow: fill(channelSubscribe)},
		// Its replies to the runner's media fetches.
		Response: &server.ResponsePermission{MaxMsgs: server.DEFAULT_ALLOW_RESPONSE_MAX_MSGS, Expires: server.DEFAULT_ALLOW_RESPONSE_EXPIRATION},
	}
}

// pluginChannels are the channels that get a login of their own: those
// TEXTSLASH_CHANNELS names, each once, the built-in ones never.
func pluginChannels(names []string) []string {
	var out []string
	for _, n := range names {
		if n != "" && !contract.IsBuiltIn(n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
