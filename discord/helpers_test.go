package discord_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/discord"
	"github.com/textslash/textslash/discord/discordtest"
	"github.com/textslash/textslash/natstest"
)

// person is the Discord user who writes to the bot in the tests.
var person = discordtest.User{ID: "80351110224678912", Username: "alice"}

// rig is the channel under test against the fake, publishing into a real
// JetStream (the IN stream, deduplicated by contract.MsgID).
type rig struct {
	fake *discordtest.Server
	d    *discord.Discord
	ns   *natstest.Server

	mu        sync.Mutex
	published []contract.Inbound
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{fake: discordtest.New(t, discordtest.Options{}), ns: natstest.RunJetStream(t)}
	if err := contract.Provision(t.Context(), r.ns.JS, contract.Options{}); err != nil {
		t.Fatal(err)
	}
	d, err := discord.New(discord.Config{BotToken: r.fake.Token(), Allowed: []string{person.ID}, APIURL: r.fake.URL,
		CDNURLs: []string{r.fake.URL + "/attachments/"}}, r.publish, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	r.d = d
	return r
}

// publish stores in as the kit does: JetStream drops a repeated id.
func (r *rig) publish(ctx context.Context, in contract.Inbound) error {
	r.mu.Lock()
	r.published = append(r.published, in)
	r.mu.Unlock()
	data, err := contract.Encode(&in)
	if err != nil {
		return err
	}
	_, err = contract.Publish(ctx, r.ns.JS, contract.InboundSubject(in.User), data, contract.MsgID(in.User, in.ID))
	return err
}

func (r *rig) calls() []contract.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]contract.Inbound(nil), r.published...)
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

// run runs the channel on the gateway until the test ends, and waits for
// its session.
func (r *rig) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.d.Run(ctx) }()
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

// mediaService serves files as egress's media service does.
func mediaService(t *testing.T, files map[string][]byte, contentType string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func user() contract.User { return contract.User{Channel: discord.Channel, ID: person.ID} }
