package bus

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
)

// Trace is the trace id a message's headers carry; "" when none.
func Trace(h nats.Header) string { return h.Get(contract.HeaderTrace) }

// TraceLog is log with the trace id as LogTrace; log itself when the id
// is empty.
func TraceLog(log zerolog.Logger, trace string) zerolog.Logger {
	if trace == "" {
		return log
	}
	return log.With().Str(contract.LogTrace, trace).Logger()
}

// Traced returns ctx and log carrying the trace of a message's headers:
// what Settle gives a handler of the message.
func Traced(ctx context.Context, log zerolog.Logger, h nats.Header) (context.Context, zerolog.Logger) {
	trace := Trace(h)
	return contract.WithTrace(ctx, trace), TraceLog(log, trace)
}

// NewMsg is a message for subject carrying ctx's trace (see WithTrace)
// as its HeaderTrace; for publishes that Publish does not make.
func NewMsg(ctx context.Context, subject string, data []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	if trace := contract.TraceFrom(ctx); trace != "" {
		m.Header.Set(contract.HeaderTrace, trace)
	}
	return m
}
