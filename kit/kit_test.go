package kit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/access"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/kit"
	"github.com/textslash/textslash/natstest"
)

// sender records what the kit sends; the first send of a body in
// retryOnce is refused with a RetryAfter, one in refuse for good.
type sender struct {
	mu        sync.Mutex
	sent      []channel.Message
	tries     map[string]int
	retryOnce string
	refuse    string
}

func (s *sender) Send(_ context.Context, _ contract.User, m channel.Message) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tries == nil {
		s.tries = map[string]int{}
	}
	s.tries[m.Body]++
	switch {
	case m.Body == s.refuse:
		return "", &channel.SendError{Err: errors.New("no such person"), Permanent: true, Code: 404}
	case m.Body == s.retryOnce && s.tries[m.Body] == 1:
		return "", &channel.SendError{Err: errors.New("slow down"), Status: 429, RetryAfter: 50 * time.Millisecond}
	}
	s.sent = append(s.sent, m)
	return fmt.Sprintf("p%d", len(s.sent)), nil
}

func (s *sender) bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.sent {
		out = append(out, m.Body)
	}
	return out
}

func open(t *testing.T, s *natstest.Server, ch channel.Channel) *kit.Kit {
	t.Helper()
	if err := bus.Provision(t.Context(), s.JS, bus.Options{Channels: []string{ch.Name()}}); err != nil {
		t.Fatal(err)
	}
	k, err := kit.Open(t.Context(), s.NC, ch, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Publish lets in the allowed, once per message id, pairs a stranger's
// code in and drops anything else a stranger sends.
func TestPublish(t *testing.T) {
	s := natstest.RunJetStream(t)
	k := open(t, s, testChannel{name: "chat", Sender: &sender{}, allowed: []string{"alice"}})
	ctx := t.Context()
	alice, bob := contract.User{Channel: "chat", ID: "alice"}, contract.User{Channel: "chat", ID: "bob"}
	for range 2 {
		if err := k.Publish(ctx, contract.Inbound{ID: "m1", User: alice, Text: "echo hi"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Publish(ctx, contract.Inbound{ID: "m2", User: bob, Text: "echo hi"}); !errors.Is(err, channel.ErrNotAllowed) {
		t.Errorf("a stranger's message: %v; want ErrNotAllowed", err)
	}
	if err := k.Publish(ctx, contract.Inbound{ID: "m3", User: contract.User{Channel: "other", ID: "alice"}}); !errors.Is(err, contract.ErrInvalidUser) {
		t.Errorf("a person of another channel: %v; want ErrInvalidUser", err)
	}
	p, err := access.OpenPairing(ctx, s.JS)
	if err != nil {
		t.Fatal(err)
	}
	// The dispatcher's pairing service.
	go access.ServePairing(ctx, s.NC, p, zerolog.Nop())
	natstest.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		_, err := s.NC.Request("$SRV.PING.pairing", nil, time.Second)
		return err
	})
	code, err := p.NewCode(ctx, "operator")
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Publish(ctx, contract.Inbound{ID: "m4", User: bob, Text: strings.ToLower(code)}); err != nil {
		t.Fatalf("bob's code: %v", err)
	}
	stream, err := s.JS.Stream(ctx, contract.StreamIn)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for seq := uint64(1); ; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		if err != nil {
			break
		}
		var in contract.Inbound
		if err := contract.Decode(m.Data, &in); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s paired=%v", m.Subject, m.Header.Get(contract.HeaderMsgID), in.Text, in.Paired))
	}
	want := []string{"ts.in.chat.alice chat.alice:m1 echo hi paired=false", "ts.in.chat.bob chat.bob:m4  paired=true"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("IN holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Run sends a person's events in order through the Sender: progress, a
// reply paged with MORE, a send retried after its RetryAfter, and one
// refused for good as a dead letter.
func TestRunDelivers(t *testing.T) {
	s := natstest.RunJetStream(t)
	snd := &sender{retryOnce: "working", refuse: "nobody there"}
	k := open(t, s, testChannel{name: "chat", Sender: snd, allowed: []string{"alice"},
		rules: channel.Rules{BodyLimit: 60, ProgressEvery: time.Millisecond}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	alice := contract.User{Channel: "chat", ID: "alice"}
	long := strings.Repeat("word ", 20)
	for i, ev := range []contract.Event{
		{Kind: contract.KindProgress, Text: "working"},
		{Kind: contract.KindDone, Text: long},
		{Kind: contract.KindMore},
		{Kind: contract.KindNotice, Text: "nobody there"},
		{Kind: contract.KindNotice, Text: "after"},
	} {
		ev.User, ev.JobID = alice, "m1"
		if err := bus.PublishEvent(t.Context(), s.JS, ev, contract.MsgID(alice, "m1", string(ev.Kind), fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if got := snd.bodies(); len(got) < 4 {
			return fmt.Errorf("sent %q; want 4 messages", got)
		}
		return nil
	})
	got := snd.bodies()
	if got[0] != "working" || !strings.HasPrefix(got[1], "word word") || !strings.Contains(got[1], "Reply MORE") ||
		!strings.Contains(got[2], "(page 2/") || got[3] != "after" || len(got) != 4 {
		t.Errorf("sent %q; want the progress, page 1 with MORE, page 2, then after", got)
	}
	// Every message about job m1 says so (a channel sends it where the job
	// came from), the reply's pages included.
	snd.mu.Lock()
	for _, m := range snd.sent[:3] {
		if m.JobID != "m1" {
			t.Errorf("message %q: job %q; want m1", m.Body, m.JobID)
		}
	}
	snd.mu.Unlock()
	if snd.tries["working"] != 2 {
		t.Errorf("progress tried %d times; want 2 (once refused with a RetryAfter)", snd.tries["working"])
	}
	dead, err := s.JS.Stream(t.Context(), contract.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	m, err := dead.GetLastMsgForSubject(t.Context(), contract.EventSubject(alice, contract.KindUndelivered))
	if err != nil {
		t.Fatalf("dead letter: %v", err)
	}
	var ev contract.Event
	if err := contract.Decode(m.Data, &ev); err != nil || ev.Text != "nobody there" || ev.Code != 404 {
		t.Errorf("dead letter %+v, %v; want the refused notice, code 404", ev, err)
	}
}

// The runner's media fetch for the channel's people is answered with
// Channel.Fetch; other URLs are refused, and a reply's images are read
// back by their MediaRef.
func TestMediaFetch(t *testing.T) {
	s := natstest.RunJetStream(t)
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	fetch := func(_ context.Context, url string) ([]byte, string, error) {
		if url != "chat://photo" {
			return nil, "", channel.ErrNotMine
		}
		return buf.Bytes(), "", nil
	}
	k := open(t, s, fetchingChannel{testChannel{name: "chat", Sender: &sender{}, allowed: []string{"alice"}}, fetch})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ask := func(url string) (contract.Image, string) {
		data, _ := contract.Encode(&contract.MediaFetch{User: contract.User{Channel: "chat", ID: "alice"}, Media: contract.Media{URL: url, ContentType: "image/jpeg"}})
		var img contract.Image
		var code string
		natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
			resp, err := s.NC.Request(contract.MediaFetchSubject("chat"), data, 5*time.Second)
			if err != nil {
				return err
			}
			if code = resp.Header.Get(micro.ErrorCodeHeader); code != "" {
				return nil
			}
			return json.Unmarshal(resp.Data, &img)
		})
		return img, code
	}
	img, code := ask("chat://photo")
	if code != "" || img.ContentType != contract.ImagePNG || img.Size != buf.Len() {
		t.Fatalf("fetch: %+v, error %q; want the png", img, code)
	}
	if _, code := ask("https://elsewhere/x"); code != "403" {
		t.Errorf("another URL: error %q; want 403", code)
	}
	a, err := k.Media(t.Context(), kit.MediaRef(img))
	if err != nil || !bytes.Equal(a.Data, buf.Bytes()) || a.ContentType != contract.ImagePNG || a.Name != "image.png" {
		t.Errorf("Media(%s): %s %q %d bytes, %v; want the png back", kit.MediaRef(img), a.ContentType, a.Name, len(a.Data), err)
	}
	if _, err := k.Media(t.Context(), "https://x/y"); !errors.Is(err, kit.ErrNotStored) {
		t.Errorf("Media of another link: %v; want ErrNotStored", err)
	}
	if _, err := k.Media(t.Context(), contract.StoredMedia+"nosuch"); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Errorf("Media of an object gone: %v; want ErrObjectNotFound", err)
	}
}

// testChannel is a channel of the tests, made of its parts; its inbound
// side is the test's own (it publishes with the kit).
type testChannel struct {
	name    string
	allowed []string
	rules   channel.Rules
	channel.Sender
}

func (c testChannel) Name() string                                  { return c.name }
func (c testChannel) Rules() channel.Rules                          { return c.rules }
func (c testChannel) Allowed() []string                             { return c.allowed }
func (c testChannel) Run(ctx context.Context, _ channel.Host) error { <-ctx.Done(); return nil }

// fetchingChannel is a testChannel that takes attachments.
type fetchingChannel struct {
	testChannel
	fetch func(ctx context.Context, url string) ([]byte, string, error)
}

func (c fetchingChannel) Fetch(ctx context.Context, url string) ([]byte, string, error) {
	return c.fetch(ctx, url)
}
