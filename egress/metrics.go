package egress

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	messagesOut = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "textslash_messages_out_total",
		Help: "Messages sent to people through a provider, by channel and the kind of event they carry.",
	}, []string{"channel", "kind"})
	refused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "textslash_egress_refused_total",
		Help: "Events dropped by egress because their user is not on the channel's allowlist, by channel.",
	}, []string{"channel"})
	sendErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "textslash_send_errors_total",
		Help: "Failed send attempts, by channel and the provider's error code (Twilio's 20429, 63016, ...; 0: none given, e.g. a network error).",
	}, []string{"channel", "code"})
)
