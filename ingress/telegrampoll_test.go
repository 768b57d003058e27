package ingress_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/textslash/textslash/channel"
	"github.com/textslash/textslash/channels/telegram"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/ingress"
	"github.com/textslash/textslash/natstest"
	"github.com/textslash/textslash/telegramtest"
)

// runTelegram runs an ingress with Telegram on js until the test ends or
// the returned stop is called (stop waits for Run to return).
func runTelegram(t *testing.T, js jetstream.JetStream, tg telegram.Config) (*ingress.Ingress, func()) {
	t.Helper()
	tg.BotToken, tg.Allowed = telegramtest.Token, []string{"4242"}
	ch := telegramChannel(t, js, tg)
	in, err := ingress.New(ingress.Config{Channels: []channel.Channel{ch}}, js, zerolog.New(zerolog.NewTestWriter(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("ingress Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return in, stop
}

// telegramChannel is the Telegram channel of tg on js (provisioned: its
// bucket of leases), as an ingress runs it.
func telegramChannel(t testing.TB, js jetstream.JetStream, tg telegram.Config) *telegram.Telegram {
	t.Helper()
	if tg.LocalURL == "" {
		tg.LocalURL = "http://127.0.0.1:8080" // the media service, which only Send reads
	}
	leases, err := js.KeyValue(t.Context(), contract.BucketTelegram)
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.Nop() // a fuzz target logs nothing
	if tt, ok := t.(*testing.T); ok {
		log = zerolog.New(zerolog.NewTestWriter(tt))
	}
	ch, err := telegram.New(tg, leases, log)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// provisioned is a JetStream with textslash's streams and buckets.
func provisioned(t *testing.T) *natstest.Server {
	t.Helper()
	ns := natstest.RunJetStream(t)
	if err := bus.Provision(t.Context(), ns.JS, bus.Options{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// inboundIDs waits until IN holds want's ids, and fails if it holds any
// other or one twice.
func inboundIDs(t *testing.T, h *twilioHarness, want ...string) {
	t.Helper()
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		var got []string
		for _, in := range h.inbound() {
			got = append(got, in.ID)
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("IN holds %v; want %v", got, want)
		}
		return nil
	})
}

// getUpdates are the getUpdates calls among calls.
func getUpdates(calls []telegramtest.UpdateCall) []telegramtest.UpdateCall {
	return slices.DeleteFunc(slices.Clone(calls), func(c telegramtest.UpdateCall) bool { return c.Method != "getUpdates" })
}

// Without a public URL, ingress takes the bot's updates by polling: it
// deletes the webhook first (Telegram refuses getUpdates while one is
// set), then long-polls with the timeout; messages and button presses
// come in as the webhook's would, and no webhook is served without a
// secret.
func TestTelegramPollsWithoutPublicURL(t *testing.T) {
	api := telegramtest.NewAPI(t)
	ns := provisioned(t)
	h := &twilioHarness{t: t, js: ns.JS}
	question := api.AddMessage(4242, "May I?", [][]telegramtest.Button{{{Text: "Yes", Data: "yes"}}})
	api.Send(telegramtest.Update(1, 4242, "echo one", ""))
	api.Send(telegramtest.Update(2, 999, "a stranger", ""))
	in, _ := runTelegram(t, ns.JS, telegram.Config{APIURL: api.URL, Poller: "a", PollTimeout: time.Second})

	inboundIDs(t, h, "tg1")
	press := api.Callback(3, 4242, question, "yes")
	api.Send(press)
	api.Send(telegramtest.Update(4, 4242, "echo four", ""))
	inboundIDs(t, h, "tg1", "tgcb"+queryID(t, press), "tg4")

	calls := api.UpdateCalls()
	if len(calls) < 2 || calls[0].Method != "deleteWebhook" || calls[1].Method != "getUpdates" {
		t.Fatalf("calls %+v; want deleteWebhook, then getUpdates", calls)
	}
	if c := calls[1]; c.Timeout != 1 || !slices.Equal(c.AllowedUpdates, []string{"message", "callback_query"}) {
		t.Errorf("getUpdates %+v; want timeout 1 and allowed updates message, callback_query", c)
	}
	// The press was answered, as at the webhook.
	if c := api.WaitCalls(t, 1, 5*time.Second); c[0].Method != "answerCallbackQuery" {
		t.Errorf("calls %+v; want the press answered", c)
	}
	srv := httptest.NewServer(in.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+telegram.WebhookPath, "application/json", strings.NewReader(string(telegramtest.Update(9, 4242, "forged", ""))))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || slices.Contains(in.Routes(), "POST "+telegram.WebhookPath) {
		t.Errorf("webhook without a secret: %d, routes %v; want 404, not served", resp.StatusCode, in.Routes())
	}
}

// dyingJS is a JetStream whose ingress dies (die is called and every
// later write of the telegram bucket fails) as it writes an offset past
// 1 to the telegram bucket: after publishing the updates, before
// committing the offset past them.
type dyingJS struct {
	jetstream.JetStream
	die  func()
	dead atomic.Bool
}

func (d *dyingJS) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	kv, err := d.JetStream.KeyValue(ctx, bucket)
	if err != nil || bucket != contract.BucketTelegram {
		return kv, err
	}
	return &dyingKV{KeyValue: kv, d: d}, nil
}

type dyingKV struct {
	jetstream.KeyValue
	d *dyingJS
}

var errDead = errors.New("the process died")

func (k *dyingKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	var p contract.TelegramPoll
	if err := json.Unmarshal(value, &p); err != nil {
		return 0, err
	}
	if k.d.dead.Load() || p.Offset > 1 {
		if !k.d.dead.Swap(true) {
			k.d.die()
		}
		return 0, errDead
	}
	return k.KeyValue.Update(ctx, key, value, rev)
}

func (k *dyingKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if k.d.dead.Load() {
		return 0, errDead
	}
	return k.KeyValue.Create(ctx, key, value, opts...)
}

// The offset is committed only after the updates before it are in IN: an
// ingress killed between the publish and the commit is restarted at the
// last offset committed, takes the same updates again, and IN keeps one
// of each (their Nats-Msg-Id); a clean stop commits where it was, and the
// next ingress (another, once the lease is given back) goes on from there,
// nothing lost, nothing repeated.
func TestTelegramPollResumesAtCommittedOffset(t *testing.T) {
	api := telegramtest.NewAPI(t)
	ns := provisioned(t)
	h := &twilioHarness{t: t, js: ns.JS}
	api.Send(telegramtest.Update(1, 4242, "echo one", ""))
	api.Send(telegramtest.Update(2, 4242, "echo two", ""))
	tg := telegram.Config{APIURL: api.URL, Poller: "host-1", PollTimeout: time.Second}

	died := make(chan struct{})
	dying := &dyingJS{JetStream: ns.JS, die: func() { close(died) }}
	_, stop := runTelegram(t, dying, tg)
	select {
	case <-died:
	case <-time.After(10 * time.Second):
		t.Fatal("no offset past the updates written in 10s")
	}
	stop()
	inboundIDs(t, h, "tg1", "tg2")
	first := len(getUpdates(api.UpdateCalls()))

	// The restart asks from offset 0 again: both updates come back, and
	// IN keeps one of each.
	_, stop = runTelegram(t, ns.JS, tg)
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if polls := getUpdates(api.UpdateCalls())[first:]; len(polls) == 0 || polls[0].Status == 0 {
			return errors.New("no poll answered since the restart")
		}
		return nil
	})
	if polls := getUpdates(api.UpdateCalls())[first:]; polls[0].Offset != 0 || !slices.Equal(polls[0].Updates, []int64{1, 2}) {
		t.Errorf("first poll after the crash %+v; want offset 0 (none committed), updates 1 and 2 again", polls[0])
	}
	api.Send(telegramtest.Update(3, 4242, "echo three", ""))
	inboundIDs(t, h, "tg1", "tg2", "tg3")
	stop()

	// A clean stop committed offset 4 and gave the lease back: another
	// ingress polls from there at once.
	kv, _ := ns.JS.KeyValue(t.Context(), contract.BucketTelegram)
	e, err := kv.Get(t.Context(), contract.TelegramUpdatesKey)
	if err != nil {
		t.Fatal(err)
	}
	var p contract.TelegramPoll
	if err := contract.Decode(e.Value(), &p); err != nil || p.Offset != 4 || p.Poller != "" {
		t.Fatalf("after a clean stop the key holds %s (%v); want offset 4, no poller", e.Value(), err)
	}
	second := len(getUpdates(api.UpdateCalls()))
	runTelegram(t, ns.JS, telegram.Config{APIURL: api.URL, Poller: "host-2", PollTimeout: time.Second})
	api.Send(telegramtest.Update(4, 4242, "echo four", ""))
	inboundIDs(t, h, "tg1", "tg2", "tg3", "tg4")
	if polls := getUpdates(api.UpdateCalls())[second:]; polls[0].Offset != 4 {
		t.Errorf("first poll of the next ingress %+v; want offset 4", polls[0])
	}
}

// Two ingresses: one polls at a time (Telegram would end one of two polls
// with 409), the other stands by and takes over when the first stops.
func TestTelegramOnePollerAtATime(t *testing.T) {
	api := telegramtest.NewAPI(t)
	ns := provisioned(t)
	h := &twilioHarness{t: t, js: ns.JS}
	stops := map[string]func(){}
	for _, name := range []string{"a", "b"} {
		_, stops[name] = runTelegram(t, ns.JS, telegram.Config{APIURL: api.URL, Poller: name, PollTimeout: time.Second})
	}
	for id := 1; id <= 3; id++ {
		api.Send(telegramtest.Update(id, 4242, fmt.Sprintf("echo %d", id), ""))
	}
	inboundIDs(t, h, "tg1", "tg2", "tg3")

	kv, _ := ns.JS.KeyValue(t.Context(), contract.BucketTelegram)
	e, err := kv.Get(t.Context(), contract.TelegramUpdatesKey)
	if err != nil {
		t.Fatal(err)
	}
	var p contract.TelegramPoll
	if err := contract.Decode(e.Value(), &p); err != nil || stops[p.Poller] == nil {
		t.Fatalf("key %s (%v); want one of a and b polling", e.Value(), err)
	}
	stops[p.Poller]()
	api.Send(telegramtest.Update(4, 4242, "echo 4", ""))
	inboundIDs(t, h, "tg1", "tg2", "tg3", "tg4")
	for _, c := range getUpdates(api.UpdateCalls()) {
		if c.Status == http.StatusConflict {
			t.Errorf("poll %+v ended by another: two ingresses polled at once", c)
		}
	}
}

// With an https public URL, ingress sets the bot's webhook at start, with
// its secret and the updates it takes, and polls nothing.
func TestTelegramSetsWebhookWithPublicURL(t *testing.T) {
	api := telegramtest.NewAPI(t)
	ns := provisioned(t)
	runTelegram(t, ns.JS, telegram.Config{APIURL: api.URL, PublicURL: "https://bot.example.net/", Secret: tgSecret, PollTimeout: time.Second})
	var calls []telegramtest.UpdateCall
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if calls = api.UpdateCalls(); len(calls) == 0 {
			return errors.New("no setWebhook")
		}
		return nil
	})
	c := calls[0]
	if c.Method != "setWebhook" || c.URL != "https://bot.example.net"+telegram.WebhookPath || c.Secret != tgSecret ||
		!slices.Equal(c.AllowedUpdates, []string{"message", "callback_query"}) || c.Status != http.StatusOK {
		t.Errorf("call %+v; want setWebhook of https://bot.example.net%s with the secret, for messages and button presses", c, telegram.WebhookPath)
	}
	natstest.HoldsUntil(t, time.Now().Add(1500*time.Millisecond), func() error {
		if calls := api.UpdateCalls(); len(calls) != 1 {
			return fmt.Errorf("calls %+v; want setWebhook alone", calls)
		}
		return nil
	})
	if url, secret := api.Webhook(); url == "" || secret != tgSecret {
		t.Errorf("webhook %q, secret %q", url, secret)
	}
}

// An ingress stopped while it starts returns nil, as one stopped later
// does. Before, a stop while it opened the people bucket returned "bucket
// people: context canceled" (TestTelegramPollResumesAtCommittedOffset
// failed so on a busy machine).
func TestStopWhileStartingIsClean(t *testing.T) {
	ns := provisioned(t)
	tg := telegramtest.NewAPI(t)
	for range 20 {
		ch := telegramChannel(t, ns.JS, telegram.Config{BotToken: telegramtest.Token, Allowed: []string{"4242"}, APIURL: tg.URL})
		in, err := ingress.New(ingress.Config{Channels: []channel.Channel{ch}}, ns.JS, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- in.Run(ctx) }()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run stopped while starting: %v; want nil", err)
		}
	}
}
