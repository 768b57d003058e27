package bus

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Redeliveries counts messages a consumer got again (a crash, a lost
// acknowledgement, a failed handler), by consumer: textslash_redeliveries_total.
var Redeliveries = promauto.NewCounterVec(prometheus.CounterOpts{
	Name: "textslash_redeliveries_total",
	Help: "Messages delivered to a consumer more than once, by consumer.",
}, []string{"consumer"})
