package contract

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
)

// LogTrace is the log field holding a message's trace id, on every line
// about the message in every service: grep one id to follow a message
// from ingress to egress.
const LogTrace = "trace"

// NewTrace returns the trace id of a message entering textslash: 32 hex
// digits. When the request it came in carried a W3C traceparent header
// ("00-<trace-id>-<parent-id>-<flags>"), its trace-id is reused, so
// textslash's lines join the caller's trace; else the id is random.
func NewTrace(traceparent string) string {
	if m := traceparentRE.FindStringSubmatch(traceparent); m != nil && m[1] != "ff" && m[2] != zeroTrace {
		return m[2]
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// traceparentRE: version, trace-id, parent-id and flags of a W3C
// traceparent (a later version may append fields). Version ff and an
// all-zero trace-id are invalid.
var traceparentRE = regexp.MustCompile(`^([0-9a-f]{2})-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}(?:-|$)`)

const zeroTrace = "00000000000000000000000000000000"

type traceKey struct{}

// WithTrace returns ctx carrying trace: Publish and NewMsg under it put
// the trace on what they publish. Settle sets it for each message's
// handler, so everything a handler publishes carries its input's trace.
func WithTrace(ctx context.Context, trace string) context.Context {
	return context.WithValue(ctx, traceKey{}, trace)
}

// TraceFrom is the trace id ctx carries; "" when none.
func TraceFrom(ctx context.Context) string {
	trace, _ := ctx.Value(traceKey{}).(string)
	return trace
}
