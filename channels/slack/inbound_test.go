package slack_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channels/slack"
	"github.com/textslash/textslash/channels/slack/slacktest"
	"github.com/textslash/textslash/contract"
)

// published is the channel's Host as the channel sees it: it records
// what the channel published (refusing people other than allowed, as the
// kit's allowlist does).
type published struct {
	mu      sync.Mutex
	ins     []contract.Inbound
	err     error // returned by the next publish
	allowed string
}

func newPublished() *published { return &published{allowed: "U0ALICE1"} }

func (p *published) Publish(_ context.Context, in contract.Inbound) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		err := p.err
		p.err = nil
		return err
	}
	if in.User.ID != p.allowed {
		return channel.ErrNotAllowed
	}
	p.ins = append(p.ins, in)
	return nil
}

func (p *published) all() []contract.Inbound {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]contract.Inbound(nil), p.ins...)
}

// logs is a test's logger, and a channel closed once the channel logs
// that it is ready (Run has its Host).
func logs(t *testing.T) (zerolog.Logger, <-chan struct{}) {
	t.Helper()
	w := &readyWriter{w: zerolog.NewTestWriter(t), ready: make(chan struct{})}
	return zerolog.New(w), w.ready
}

type readyWriter struct {
	w     io.Writer
	once  sync.Once
	ready chan struct{}
}

func (r *readyWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"slack bot ready"`)) {
		r.once.Do(func() { close(r.ready) })
	}
	return r.w.Write(p)
}

// start runs s with a fake Host until the test ends, and waits for Run
// to have it (ready, from logs).
func start(t *testing.T, s *slack.Slack, ready <-chan struct{}) *published {
	t.Helper()
	p := newPublished()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, p) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	return p
}

// runSocket starts the channel in Socket Mode against fake and waits for
// its connection.
func runSocket(t *testing.T, fake *slacktest.Server) (*slack.Slack, *published) {
	t.Helper()
	log, ready := logs(t)
	s, err := slack.New(slack.Config{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Allowed: []string{"U0ALICE1"},
		APIURL: fake.APIURL()}, log)
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, s, ready)
	wait, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	if err := fake.Connected(wait); err != nil {
		t.Fatal(err)
	}
	return s, p
}

// deliver delivers one envelope and waits for its acknowledgement.
func deliver(t *testing.T, fake *slacktest.Server, kind string, payload []byte, retry int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := fake.Deliver(ctx, kind, payload, retry); err != nil {
		t.Fatal(err)
	}
}

func TestDirectMessageIn(t *testing.T) {
	fake := slacktest.New(t)
	_, p := runSocket(t, fake)
	msg := slacktest.Message{User: "U0ALICE1", Channel: "D1", ChannelType: "im", Text: "run the tests & <show> me", TS: "1712345678.000100"}
	deliver(t, fake, "events_api", msg.Event("Ev1"), 0)
	deliver(t, fake, "events_api", msg.Event("Ev1"), 1) // Slack's retry: its ack was lost
	got := p.all()
	if len(got) != 1 {
		t.Fatalf("published %d messages; want 1: %+v", len(got), got)
	}
	want := contract.Inbound{ID: "D1-1712345678_000100", User: contract.User{Channel: "slack", ID: "U0ALICE1"},
		Text: "run the tests & <show> me", At: time.Unix(1712345678, 100000).UTC()}
	if in := got[0]; in.ID != want.ID || in.User != want.User || in.Text != want.Text || !in.At.Equal(want.At) || len(in.Media) != 0 {
		t.Errorf("got %+v; want %+v", in, want)
	}
}

func TestNotStoredIsDeliveredAgain(t *testing.T) {
	fake := slacktest.New(t)
	_, p := runSocket(t, fake)
	p.err = errors.New("jetstream down")
	msg := slacktest.Message{User: "U0ALICE1", Channel: "D1", ChannelType: "im", Text: "hi", TS: "1712345678.000200"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// Not acknowledged: the fake gives up when ctx ends, as Slack would
	// deliver it again.
	if err := fake.Deliver(ctx, "events_api", msg.Event("Ev2"), 0); !errors.Is(err, slacktest.ErrNotAcknowledged) {
		t.Fatalf("first delivery, its publish failing: %v; want ErrNotAcknowledged", err)
	}
	deliver(t, fake, "events_api", msg.Event("Ev2"), 1)
	if got := p.all(); len(got) != 1 || got[0].ID != "D1-1712345678_000200" {
		t.Errorf("published %+v; want the message once, on its second delivery", got)
	}
}

func TestMentionIn(t *testing.T) {
	fake := slacktest.New(t)
	_, p := runSocket(t, fake)
	deliver(t, fake, "events_api", slacktest.Message{User: "U0ALICE1", Channel: "C7", Mention: true,
		Text: "<@" + slacktest.BotUser + "> deploy it", TS: "1712345678.000300"}.Event("Ev3"), 0)
	// Ignored: the bot's own message, an edit, a channel message without a
	// mention.
	deliver(t, fake, "events_api", slacktest.Message{User: slacktest.BotUser, BotID: slacktest.BotID, Channel: "D1", ChannelType: "im",
		Text: "a reply", TS: "1712345678.000400"}.Event("Ev4"), 0)
	deliver(t, fake, "events_api", slacktest.Message{User: "U0ALICE1", Channel: "D1", ChannelType: "im", Subtype: "message_changed",
		Text: "edited", TS: "1712345678.000500"}.Event("Ev5"), 0)
	deliver(t, fake, "events_api", slacktest.Message{User: "U0ALICE1", Channel: "C7", Text: "chatter", TS: "1712345678.000600"}.Event("Ev6"), 0)
	got := p.all()
	if len(got) != 1 {
		t.Fatalf("published %+v; want the mention only", got)
	}
	if in := got[0]; in.User != alice || in.Text != "deploy it" || in.ID != "C7-1712345678_000300" {
		t.Errorf("got %+v; want user %s, text %q, id C7-1712345678_000300", in, alice, "deploy it")
	}
}

// A stranger's message (channel.ErrNotAllowed) is dropped, and its envelope
// acknowledged: Slack does not deliver it again.
func TestStrangerDropped(t *testing.T) {
	fake := slacktest.New(t)
	_, p := runSocket(t, fake)
	deliver(t, fake, "events_api", slacktest.Message{User: "U0MALLORY", Channel: "D9", ChannelType: "im", Text: "let me in",
		TS: "1712345678.001000"}.Event("Ev10"), 0)
	deliver(t, fake, "events_api", slacktest.Message{User: "U0MALLORY", Channel: "C7", Mention: true,
		Text: "<@" + slacktest.BotUser + "> me too", TS: "1712345678.001100"}.Event("Ev11"), 0)
	if got := p.all(); len(got) != 0 {
		t.Errorf("published %+v; want nothing of a stranger", got)
	}
}

func TestFileIn(t *testing.T) {
	fake := slacktest.New(t)
	s, p := runSocket(t, fake)
	clip := []byte("OggS fake opus")
	link := fake.AddFile("audio_message.webm", "audio/webm", clip)
	deliver(t, fake, "events_api", slacktest.Message{User: "U0ALICE1", Channel: "D1", ChannelType: "im", TS: "1712345678.000700",
		Files: []slacktest.SharedFile{{ID: "F1", Name: "audio_message.webm", Mimetype: "audio/webm", Clip: true, DurationMs: 4200, URL: link}}}.Event("Ev7"), 0)
	got := p.all()
	if len(got) != 1 || len(got[0].Media) != 1 {
		t.Fatalf("published %+v; want one message with one file", got)
	}
	m := got[0].Media[0]
	if want := (contract.Media{URL: link, ContentType: "audio/webm", Name: "audio_message.webm", Voice: true, Seconds: 4}); m != want {
		t.Errorf("media %+v; want %+v", m, want)
	}
	data, ct, err := s.Fetch(context.Background(), m.URL)
	if err != nil || string(data) != string(clip) || ct != "audio/webm" {
		t.Errorf("Fetch = %q, %q, %v; want the clip, audio/webm", data, ct, err)
	}
	if _, _, err := s.Fetch(context.Background(), "https://example.com/x"); !errors.Is(err, slack.ErrNotSlackFile) || !errors.Is(err, channel.ErrNotMine) {
		t.Errorf("Fetch of another host: %v; want ErrNotSlackFile, a channel.ErrNotMine (the token goes only to Slack)", err)
	}
}
