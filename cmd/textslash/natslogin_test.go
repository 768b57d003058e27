package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/natstest"
)

// connectAs connects with a login file's settings, as the nats CLI does
// with them in its environment; the server's refusals arrive on errs.
func connectAs(t testing.TB, login map[string]string) (*nats.Conn, <-chan error) {
	t.Helper()
	errs := make(chan error, 16)
	opts := []nats.Option{nats.UserInfo(login["NATS_USER"], login["NATS_PASSWORD"]),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		})}
	if p := login["NATS_INBOX_PREFIX"]; p != "" { // as scripts/nats gives the CLI --inbox-prefix
		opts = append(opts, nats.CustomInboxPrefix(p))
	}
	nc, err := nats.Connect(login["NATS_URL"], opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", login["NATS_USER"], err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// The embedded NATS refuses clients without a login; tap reads everything
// live but cannot publish into the pipeline; admin can do anything.
func TestEmbeddedNATSLogin(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")

	if nc, err := nats.Connect(inst.NATSURL, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("a client without a login was let in")
	} else if !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("a client without a login: %v; want %v", err, nats.ErrAuthorization)
	}
	bad := natsLogin(t, inst.Data, "admin")
	bad["NATS_PASSWORD"] += "x"
	if nc, err := nats.Connect(bad["NATS_URL"], nats.UserInfo("admin", bad["NATS_PASSWORD"]), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("admin with a wrong password was let in")
	}

	// tap sees a web chat message's events as they happen.
	tap, tapErrs := connectAs(t, natsLogin(t, inst.Data, "tap"))
	var mu sync.Mutex
	var seen []string
	if _, err := tap.Subscribe("ts.>", func(m *nats.Msg) {
		mu.Lock()
		seen = append(seen, m.Subject)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := c.events(ctx)
	c.send("echo tapped")
	waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" })
	done := contract.EventSubject(c.User, contract.KindDone)
	natstest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(seen, done) {
			return fmt.Errorf("tap saw %v; want %s among them", seen, done)
		}
		return nil
	})

	// It may look the streams up, as `nats stream ls` does.
	tapJS, err := jetstream.New(tap)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range tapJS.StreamNames(ctx).Name() {
		names = append(names, name)
	}
	if !slices.Contains(names, contract.StreamEvents) {
		t.Errorf("tap's stream ls: %v; want EVENTS among them", names)
	}

	// Nor may it read the replies to other clients' requests.
	if _, err := tap.Subscribe("_INBOX.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-tapErrs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("tap's subscription to _INBOX.>: %v; want %v", err, nats.ErrPermissionViolation)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tap's subscription to _INBOX.> was not refused")
	}

	// But what it publishes into the pipeline is refused, and stored nowhere.
	forged := []string{"ts.in.web.x", "ts.ev.sms.+15550001111.done"}
	for _, subj := range forged {
		if err := tap.Publish(subj, []byte(`{"v":1,"text":"rm -rf ~"}`)); err != nil {
			t.Fatal(err)
		}
	}
	var refused []string
	for len(refused) < len(forged) {
		select {
		case err := <-tapErrs:
			if !errors.Is(err, nats.ErrPermissionViolation) {
				t.Fatalf("tap's publish: %v; want %v", err, nats.ErrPermissionViolation)
			}
			refused = append(refused, err.Error())
		case <-time.After(10 * time.Second):
			t.Fatalf("tap's publishes to %v: refused %v; want every one refused", forged, refused)
		}
	}
	// Nor may it make a consumer, which could push messages onto ts.in.
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	defer ccancel()
	if _, err := tapJS.CreateOrUpdateConsumer(cctx, contract.StreamEvents, jetstream.ConsumerConfig{
		Name: "tapped", DeliverSubject: "ts.in.web.x"}); err == nil {
		t.Error("tap created a consumer")
	}
	select {
	case err := <-tapErrs:
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "$JS.API.CONSUMER.CREATE.EVENTS") {
			t.Errorf("tap's consumer: %v; want a permissions violation for $JS.API.CONSUMER.CREATE.EVENTS", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("tap's consumer was not refused")
	}

	// admin may do anything: list the streams, read what is in them.
	admin, _ := connectAs(t, natsLogin(t, inst.Data, "admin"))
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for name := range js.StreamNames(ctx).Name() {
		names = append(names, name)
	}
	for _, s := range []string{contract.StreamIn, contract.StreamEvents, contract.StreamJobs} {
		if !slices.Contains(names, s) {
			t.Errorf("admin's stream ls: %v; want %s among them", names, s)
		}
	}
	for stream, subj := range map[string]string{contract.StreamIn: forged[0], contract.StreamEvents: forged[1]} {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := s.GetLastMsgForSubject(ctx, subj); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Errorf("%s holds %s: %v (err %v); want nothing", stream, subj, m, err)
		}
	}
	if _, err := js.Consumer(ctx, contract.StreamEvents, "tapped"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Errorf("tap's consumer on EVENTS: %v; want %v", err, jetstream.ErrConsumerNotFound)
	}
}

// The logins are in a directory only textslash may read, said where in the
// log (never the passwords), and the same after a restart.
func TestEmbeddedNATSLoginFiles(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell")
	dir := filepath.Join(inst.Data, "nats")
	check := func() map[string]map[string]string {
		t.Helper()
		if fi, err := os.Stat(dir); err != nil {
			t.Fatal(err)
		} else if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v; want a directory of mode 0700", dir, fi.Mode())
		}
		logins := map[string]map[string]string{}
		for _, user := range []string{"admin", "tap"} {
			path := filepath.Join(dir, user+".env")
			if fi, err := os.Stat(path); err != nil {
				t.Fatal(err)
			} else if fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s: %v; want mode 0600", path, fi.Mode())
			}
			logins[user] = natsLogin(t, inst.Data, user)
			if logins[user]["NATS_URL"] != inst.NATSURL || logins[user]["NATS_USER"] != user {
				t.Errorf("%s.env: %v; want NATS_URL %s, NATS_USER %s", user, logins[user], inst.NATSURL, user)
			}
		}
		if logins["admin"]["NATS_PASSWORD"] == logins["tap"]["NATS_PASSWORD"] {
			t.Error("admin and tap have the same password")
		}
		log, _ := os.ReadFile(inst.Log)
		if !strings.Contains(string(log), dir) {
			t.Errorf("the log does not say where the logins are (%s):\n%s", dir, tail(string(log), 3000))
		}
		for user, login := range logins {
			if strings.Contains(string(log), login["NATS_PASSWORD"]) {
				t.Errorf("the log shows %s's password", user)
			}
		}
		return logins
	}
	first := check()
	inst.stop()
	inst.start(t)
	second := check()
	for _, user := range []string{"admin", "tap"} {
		if second[user]["NATS_PASSWORD"] != first[user]["NATS_PASSWORD"] {
			t.Errorf("%s's password changed across a restart", user)
		}
	}
	connectAs(t, second["admin"])
}

// With TEXTSLASH_NATS_LISTEN=off nothing outside the process reaches NATS:
// there is no port and no login to write.
func TestEmbeddedNATSOff(t *testing.T) {
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_NATS_LISTEN=off")
	c := inst.newChat(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := c.events(ctx)
	c.send("echo alone")
	if ev := waitFor(t, events, 30*time.Second, func(ev sseEvent) bool { return ev.Kind == "done" }); ev.Event.Text != "alone" {
		t.Errorf("reply %q; want alone", ev.Event.Text)
	}
	if _, err := os.Stat(filepath.Join(inst.Data, "nats")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s/nats: %v; want none without a port", inst.Data, err)
	}
}
