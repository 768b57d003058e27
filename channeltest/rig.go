package channeltest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/egress"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/kit"
	"github.com/textslash/textslash/natstest"
)

// within bounds every wait of the suite: long enough for a progress
// line's turn (Rules.ProgressEvery) and a redelivery after a restart.
const within = 30 * time.Second

// rig is one case's world: the fake provider, a real embedded JetStream
// provisioned for the channel, and the runtime running the channel on it.
type rig struct {
	Provider
	runtime runtime
	ns      *natstest.Server
	name    string
	finder  bool // the channel is a channel.Finder
	sender  bool // the channel is a channel.Sender (not pulled)
	stop    func()
	events  int // events published, for their ids
}

// start provisions JetStream for p's channel and runs it with rt
// until the test ends.
func start(t *testing.T, p Provider, rt runtime) *rig {
	t.Helper()
	ns := natstest.RunJetStream(t)
	if p.JetStream != nil {
		p.JetStream(ns.JS)
	}
	ch := p.Channel()
	r := &rig{Provider: p, runtime: rt, ns: ns, name: ch.Name()}
	_, r.finder = ch.(channel.Finder)
	_, r.sender = ch.(channel.Sender)
	if err := bus.Provision(t.Context(), r.ns.JS, bus.Options{Channels: []string{r.name}}); err != nil {
		t.Fatal(err)
	}
	r.run(t, ch)
	t.Cleanup(func() { r.stop() })
	return r
}

// run runs ch with a runtime of its own until stop.
func (r *rig) run(t *testing.T, ch channel.Channel) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	routes, runs, err := r.runtime(ctx, r.ns, ch, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if r.Serve != nil {
		r.Serve(t, routes)
	}
	done := make(chan error, len(runs))
	for _, run := range runs {
		go func() { done <- run(ctx) }()
	}
	r.stop = func() {
		cancel()
		for range runs {
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("the channel's runtime: %v", err)
			}
		}
		r.stop = func() {}
	}
}

// runtime readies ch on ns as a runtime runs it: the channel's routes and
// pages, publishing with the runtime's Host, and what runs it, until ctx
// ends.
type runtime func(ctx context.Context, ns *natstest.Server, ch channel.Channel, log zerolog.Logger) (http.Handler, []func(context.Context) error, error)

// kitRuntime runs ch with a kit, as a plug-in channel's program does.
func kitRuntime(ctx context.Context, ns *natstest.Server, ch channel.Channel, log zerolog.Logger) (http.Handler, []func(context.Context) error, error) {
	k, err := kit.Open(ctx, ns.NC, ch, log)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	if router, ok := ch.(channel.Router); ok {
		for route, h := range router.Routes(k) {
			mux.Handle(route, h)
		}
	}
	if pager, ok := ch.(channel.Pager); ok {
		for route, h := range pager.Pages(k) {
			mux.Handle(route, h)
		}
	}
	return mux, []func(context.Context) error{k.Run}, nil
}

// builtInRuntime runs ch with ingress and, for a Sender, egress, as
// textslash runs its built-in channels.
func builtInRuntime(_ context.Context, ns *natstest.Server, ch channel.Channel, log zerolog.Logger) (http.Handler, []func(context.Context) error, error) {
	in, err := ingress.New(ingress.Config{Channels: []channel.Channel{ch}}, ns.JS, log)
	if err != nil {
		return nil, nil, err
	}
	runs := []func(context.Context) error{in.Run}
	if _, ok := ch.(channel.Sender); ok {
		signer, err := contract.NewMediaSigner([]byte("the conformance suite's media key"), contract.MediaTTL)
		if err != nil {
			return nil, nil, err
		}
		out, err := egress.New(egress.Config{Channels: []channel.Channel{ch}, Signer: signer}, ns.JS, log)
		if err != nil {
			return nil, nil, err
		}
		runs = append(runs, out.Run)
	}
	mux := http.NewServeMux()
	for _, route := range in.Routes() {
		mux.Handle(route, in.Handler())
	}
	if pages := in.Pages(); pages != nil {
		mux.Handle("/", pages)
	}
	return mux, runs, nil
}

// restart stops the runtime and runs a new channel (Provider.Channel)
// with a new one, as a channel's process killed and started again.
func (r *rig) restart(t *testing.T) {
	t.Helper()
	r.stop()
	r.run(t, r.Channel())
}

// user is the person id as textslash knows them.
func (r *rig) user(id string) contract.User { return contract.User{Channel: r.name, ID: id} }

// stored are the inbound messages the IN stream holds, in order.
func (r *rig) stored(t *testing.T) []contract.Inbound {
	t.Helper()
	s, err := r.ns.JS.Stream(t.Context(), contract.StreamIn)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []contract.Inbound
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatalf("IN message %d: %v", seq, err)
		}
		var in contract.Inbound
		if err := contract.Decode(m.Data, &in); err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

// waitStored waits until IN holds a message of who whose text is text,
// and returns it.
func (r *rig) waitStored(t *testing.T, who, text string) contract.Inbound {
	t.Helper()
	var found contract.Inbound
	natstest.CheckFor(t, within, 20*time.Millisecond, func() error {
		ins := r.stored(t)
		for _, in := range ins {
			if in.User == r.user(who) && in.Text == text {
				found = in
				return nil
			}
		}
		return fmt.Errorf("IN holds no %q of %s; it holds %s", text, who, texts(ins))
	})
	return found
}

// said writes text as the person in their direct conversation and waits
// for it to be stored: the job the suite's events are about.
func (r *rig) said(t *testing.T, text string) contract.Inbound {
	t.Helper()
	r.Write(t, r.Person, r.Direct(r.Person), text)
	return r.waitStored(t, r.Person, text)
}

// publish publishes ev, for the person, as the runner would.
func (r *rig) publish(t *testing.T, ev contract.Event) {
	t.Helper()
	r.events++
	ev.User = r.user(r.Person)
	if err := bus.PublishEvent(t.Context(), r.ns.JS, ev, contract.MsgID(ev.User, "conformance", fmt.Sprint(r.events))); err != nil {
		t.Fatal(err)
	}
}

// waitSent waits until the fake holds a message of the bot whose text
// contains text, and returns it.
func (r *rig) waitSent(t *testing.T, text string) Sent {
	t.Helper()
	var found Sent
	natstest.CheckFor(t, within, 20*time.Millisecond, func() error {
		sent := r.Sent()
		for _, m := range sent {
			if strings.Contains(m.Text, text) {
				found = m
				return nil
			}
		}
		return fmt.Errorf("the fake took no message with %q; it took %s", text, sentTexts(sent))
	})
	return found
}

// sentWith are the messages the fake holds whose text contains text.
func (r *rig) sentWith(text string) []Sent {
	return slices.DeleteFunc(r.Sent(), func(m Sent) bool { return !strings.Contains(m.Text, text) })
}

// settled waits until the channel's egress consumer has every event
// published so far delivered and acknowledged: none waits, none is in
// hand (a redelivery after a restart included).
func (r *rig) settled(t *testing.T) {
	t.Helper()
	natstest.CheckFor(t, within, 50*time.Millisecond, func() error {
		c, err := r.ns.JS.Consumer(t.Context(), contract.StreamEvents, bus.EgressConsumer(r.name).Durable)
		if err != nil {
			return err
		}
		info, err := c.Info(t.Context())
		if err != nil {
			return err
		}
		if info.NumPending > 0 || info.NumAckPending > 0 {
			return fmt.Errorf("%s: %d events waiting, %d in hand", info.Name, info.NumPending, info.NumAckPending)
		}
		return nil
	})
}

func texts(ins []contract.Inbound) string {
	var out []string
	for _, in := range ins {
		out = append(out, fmt.Sprintf("%s:%q", in.User.ID, in.Text))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func sentTexts(sent []Sent) string {
	var out []string
	for _, m := range sent {
		out = append(out, fmt.Sprintf("%s:%q", m.Conversation, m.Text))
	}
	return "[" + strings.Join(out, " ") + "]"
}
