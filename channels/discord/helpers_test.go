package discord_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/discord"
	"github.com/textslash/textslash/channels/discord/discordtest"
	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/kit"
	"github.com/textslash/textslash/natstest"
)

// person is the Discord user who writes to the bot in the tests.
var person = discordtest.User{ID: "80351110224678912", Username: "alice"}

// stranger writes to the bot without being allowed.
var stranger = discordtest.User{ID: "80351110224678999", Username: "mallory"}

// rig is the channel under test against the fake, with the channel kit
// on a real JetStream (the IN stream, deduplicated by contract.MsgID; the
// media store; the allowlist and pairing).
type rig struct {
	fake *discordtest.Server
	d    *discord.Discord
	k    *kit.Kit
	ns   *natstest.Server
	logs *logLines
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{fake: discordtest.New(t, discordtest.Options{}), ns: natstest.RunJetStream(t), logs: &logLines{t: t}}
	if err := bus.Provision(t.Context(), r.ns.JS, bus.Options{Channels: []string{discord.Channel}}); err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(r.logs)
	d, err := discord.New(discord.Config{BotToken: r.fake.Token(), Allowed: []string{person.ID}, APIURL: r.fake.URL,
		CDNURLs: []string{r.fake.URL + "/attachments/"}}, log)
	if err != nil {
		t.Fatal(err)
	}
	if r.k, err = kit.Open(t.Context(), r.ns.NC, d, log); err != nil {
		t.Fatal(err)
	}
	discord.UseHost(d, r.k) // Send is tried without Run
	r.d = d
	return r
}

// logLines passes the channel's log to the test's and counts its lines
// by message.
type logLines struct {
	t     *testing.T
	mu    sync.Mutex
	count map[string]int
}

func (l *logLines) Write(p []byte) (int, error) {
	var line struct{ Message string }
	_ = json.Unmarshal(p, &line)
	l.mu.Lock()
	if l.count == nil {
		l.count = map[string]int{}
	}
	l.count[line.Message]++
	l.mu.Unlock()
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// n is how many lines said msg.
func (l *logLines) n(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[msg]
}

// attach adds an image or file to m as the kit does: stored in the
// channel's media store as the runner stores it, read back by its link.
func (r *rig) attach(t *testing.T, m *channel.Message, contentType, name string, data []byte) {
	t.Helper()
	store, err := r.ns.JS.ObjectStore(t.Context(), contract.MediaBucketOf(discord.Channel))
	if err != nil {
		t.Fatal(err)
	}
	img, err := bus.PutFile(t.Context(), store, contentType, name, data)
	if err != nil {
		t.Fatal(err)
	}
	ref := kit.MediaRef(img)
	a, err := r.k.Media(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	m.Media, m.Attachments = append(m.Media, ref), append(m.Attachments, a)
}

// stored are the inbound messages JetStream kept, in order.
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
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		var in contract.Inbound
		if err := contract.Decode(m.Data, &in); err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

// waitStored waits until JetStream holds n inbound messages.
func (r *rig) waitStored(t *testing.T, n int) []contract.Inbound {
	t.Helper()
	var got []contract.Inbound
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if got = r.stored(t); len(got) != n {
			return fmt.Errorf("%d inbound messages stored; want %d", len(got), n)
		}
		return nil
	})
	return got
}

// run runs the channel with its kit (the gateway, and delivery) until
// the test ends, and waits for its session.
func (r *rig) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.k.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	natstest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("Run ended: %v", err)
		default:
		}
		if !r.fake.Connected() || r.fake.Gateway().Identifies == 0 {
			return errors.New("not connected to the gateway")
		}
		return nil
	})
}

func user() contract.User { return contract.User{Channel: discord.Channel, ID: person.ID} }

// stored is the id a message or press written in channel is stored
// under: <channel>-<id>, which says where the reply goes.
func stored(channel, id string) string { return channel + "-" + id }
