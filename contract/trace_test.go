package contract_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

var traceRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// A caller's W3C traceparent gives its trace-id; anything else gets a new
// random id.
func TestNewTrace(t *testing.T) {
	const id = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tt := range []struct {
		traceparent string
		want        string // "" for a fresh random id
	}{
		{"00-" + id + "-00f067aa0ba902b7-01", id},
		{"01-" + id + "-00f067aa0ba902b7-00-later-fields", id},
		{"", ""},
		{"ff-" + id + "-00f067aa0ba902b7-01", ""},                           // invalid version
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},     // all-zero trace-id
		{"00-" + strings.ToUpper(id) + "-00f067aa0ba902b7-01", ""},          // upper case
		{"00-" + id + "-00f067aa0ba902b7-01x", ""},                          // trailing junk
		{"00-" + id[:31] + "-00f067aa0ba902b7-01", ""},                      // short
		{"not a traceparent at all, but " + id + " is in it somewhere", ""}, // no shape
	} {
		got := contract.NewTrace(tt.traceparent)
		if tt.want != "" && got != tt.want {
			t.Errorf("NewTrace(%q) = %q; want %q", tt.traceparent, got, tt.want)
		}
		if tt.want == "" && (got == id || !traceRE.MatchString(got)) {
			t.Errorf("NewTrace(%q) = %q; want 32 random hex digits", tt.traceparent, got)
		}
	}
	if a, b := contract.NewTrace(""), contract.NewTrace(""); a == b {
		t.Errorf("two new traces are both %q", a)
	}
}

// Publish puts ctx's trace on the message, with its Nats-Msg-Id, and no
// trace header when ctx has none.
func TestPublishCarriesTrace(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	stream, err := s.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	if err != nil {
		t.Fatal(err)
	}
	trace := contract.NewTrace("")
	for _, tt := range []struct {
		ctx       context.Context
		subject   string
		wantTrace string
	}{
		{contract.WithTrace(ctx, trace), "t.traced", trace},
		{ctx, "t.plain", ""},
	} {
		ack, err := bus.Publish(tt.ctx, s.JS, tt.subject, []byte("x"), "id-"+tt.subject)
		if err != nil {
			t.Fatal(err)
		}
		m, err := stream.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		if got := bus.Trace(m.Header); got != tt.wantTrace {
			t.Errorf("%s: trace header %q; want %q", tt.subject, got, tt.wantTrace)
		}
		if got := m.Header.Get(contract.HeaderMsgID); got != "id-"+tt.subject {
			t.Errorf("%s: Nats-Msg-Id %q; want %q", tt.subject, got, "id-"+tt.subject)
		}
	}
}

// Settle hands a handler its message's trace: in the context, so what the
// handler publishes carries it, and on the logger, for its lines and
// Settle's own.
func TestSettlePassesTraceOn(t *testing.T) {
	s := natstest.RunJetStream(t)
	ctx := t.Context()
	stream, err := s.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	if err != nil {
		t.Fatal(err)
	}
	trace := contract.NewTrace("")
	if _, err := bus.Publish(contract.WithTrace(ctx, trace), s.JS, "t.in", []byte("in"), "in"); err != nil {
		t.Fatal(err)
	}
	cons, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{FilterSubject: "t.in", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	bus.Settle(ctx, msg, func(ctx context.Context, _ jetstream.Msg) error {
		zerolog.Ctx(ctx).Info().Msg("handled")
		_, err := bus.Publish(ctx, s.JS, "t.out", []byte("out"), "out")
		return err
	}, zerolog.New(&logs))

	out, err := stream.GetLastMsgForSubject(ctx, "t.out")
	if err != nil {
		t.Fatalf("the handler published nothing: %v", err)
	}
	if got := bus.Trace(out.Header); got != trace {
		t.Errorf("published under the handler: trace %q; want the input's %q", got, trace)
	}
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if line[contract.LogTrace] != trace || line["message"] != "handled" {
		t.Errorf("handler's log line %v; want %s %q", line, contract.LogTrace, trace)
	}
	// Settle's ack is not waited for, so the server may count it a moment later.
	natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending != 0 || info.AckFloor.Stream != 1 {
			return fmt.Errorf("input not acknowledged: %d pending, ack floor %d", info.NumAckPending, info.AckFloor.Stream)
		}
		return nil
	})
}
