package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
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

// TestCrashLoop SIGKILLs the all-in-one again and again while messages
// flow through it, restarting it each time, and then counts, from the
// agent's own log and the replies in EVENTS: every message ran at most once
// and got exactly one final reply; every message whose run was not
// interrupted by a kill ran exactly once; each user's messages ran in the
// order they were sent; nobody is left working.
func TestCrashLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("crash loop takes ~20 s")
	}
	const users, perUser, kills = 20, 5, 8 // perUser ≤ 1 running + 4 waiting: no "Queue full"
	logDir := sharedDir(t)
	runlog := filepath.Join(logDir, "runs.log")
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_LOG_LEVEL=info", "TEXTSLASH_CONCURRENCY=4", "TEXTSLASH_SANDBOX_SHARE="+logDir)
	chats := make([]*chat, users)
	for i := range chats {
		chats[i] = inst.newChat(t)
	}

	// post sends message i of a user, retrying with the same id until the
	// server (which may be down) has stored it.
	post := func(c *chat, i int) {
		id := fmt.Sprintf("m%d", i)
		text := fmt.Sprintf("echo %s %s >> %s; sleep 0.0%d; echo done %s", c.User.ID, id, runlog, rand.IntN(10), id)
		body, _ := json.Marshal(map[string]string{"id": id, "text": text})
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			resp, err := c.client.Post(inst.URL+"/api/messages", "application/json", bytes.NewReader(body))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("%s %s: never accepted", c.User, id)
	}

	// Send in rounds, one message per user per round, while killing.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range perUser {
			var round sync.WaitGroup
			for _, c := range chats {
				round.Go(func() { post(c, i) })
			}
			round.Wait()
			time.Sleep(150 * time.Millisecond)
		}
	}()
	for k := range kills {
		time.Sleep(time.Duration(150+rand.IntN(350)) * time.Millisecond)
		inst.kill()
		t.Logf("kill %d", k+1)
		inst.start(t)
	}
	wg.Wait()

	// Every message gets its reply.
	total := users * perUser
	dones := map[string][]contract.Event{} // "<user id> <message id>" → done events
	deadline := time.Now().Add(90 * time.Second)
	for {
		dones = readDones(t, inst.adminURL(t))
		if len(dones) >= total || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}

	runsOf, order := readRunLog(t, runlog)

	var ran, interrupted, interruptedUnrun int
	for _, c := range chats {
		for i := range perUser {
			key := fmt.Sprintf("%s m%d", c.User.ID, i)
			runs, replies := runsOf[key], dones[key]
			switch {
			case len(replies) != 1:
				t.Errorf("%s: %d final replies, %d runs; want exactly 1 reply", key, len(replies), runs)
			case runs > 1:
				t.Errorf("%s: ran %d times", key, runs)
			case replies[0].Status == contract.StatusInterrupted:
				interrupted++
				if runs == 0 {
					interruptedUnrun++
				}
			case replies[0].Status != contract.StatusOK || runs != 1:
				t.Errorf("%s: status %s after %d runs, reply %q; want ok after 1 run", key, replies[0].Status, runs, replies[0].Text)
			default:
				ran++
			}
		}
		// A user's messages ran in the order they were sent.
		if got := order[c.User.ID]; !slices.IsSorted(got) {
			t.Errorf("%s ran in order %v", c.User, got)
		}
	}
	t.Logf("%d kills; %d messages: %d ran once, %d interrupted by a kill (told so; %d of them before their command started)",
		kills, total, ran, interrupted, interruptedUnrun)

	// Nobody is left working, and nothing is left waiting.
	nc, err := nats.Connect(inst.adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for _, c := range chats {
		natstest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error { return stateIdle(t.Context(), js, c.User) })
	}
	// Acknowledgements trail the replies a little, and one that a kill
	// lost (the message handled, its ack not yet sent) is made good when
	// the message comes again, after its AckWait (IN's: 30 s), and is
	// found handled.
	for _, name := range []string{contract.StreamQueue, contract.StreamJobs, contract.StreamIn} {
		s, err := js.Stream(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		natstest.CheckFor(t, 45*time.Second, 50*time.Millisecond, func() error {
			if info, err := s.Info(t.Context()); err != nil || info.State.Msgs != 0 {
				return fmt.Errorf("stream %s holds %d messages at the end (%v)", name, info.State.Msgs, err)
			}
			return nil
		})
	}
}

// readDones reads every done event in EVENTS on the NATS at url, by
// "<user id> <job id>".
func readDones(t *testing.T, url string) map[string][]contract.Event {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	out, err := doneEvents(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// doneEvents reads every done event in EVENTS, by "<user id> <job id>".
func doneEvents(ctx context.Context, js jetstream.JetStream) (map[string][]contract.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, contract.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contract.AllEvents(contract.KindDone)},
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]contract.Event{}
	for {
		batch, err := cons.FetchNoWait(500)
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			var ev contract.Event
			if err := contract.Decode(m.Data(), &ev); err == nil {
				key := ev.User.ID + " " + ev.JobID
				out[key] = append(out[key], ev)
			}
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			return out, nil
		}
	}
}

// readRunLog reads a run log of "<user id> <message id>" lines: how many
// times each message ran, and each user's messages in the order they ran.
func readRunLog(t *testing.T, path string) (runsOf map[string]int, order map[string][]string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	runsOf, order = map[string]int{}, map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Errorf("run log line %q", line)
			continue
		}
		runsOf[f[0]+" "+f[1]]++
		order[f[0]] = append(order[f[0]], f[1])
	}
	return runsOf, order
}
