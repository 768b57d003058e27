package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/textslash/textslash/contract"
	"github.com/textslash/textslash/contract/bus"
	"github.com/textslash/textslash/natstest"
)

// TestClusterLeaderLoss runs the all-in-one against a three-server
// JetStream cluster with every stream and bucket on three replicas, drives
// messages of several web chat users through it, and shuts down the server
// leading the IN stream mid-load. Every message still gets exactly one
// reply with its own output, none runs twice, each user's run in the order
// sent, and messages sent after the loss are answered too.
func TestClusterLeaderLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test takes 10-40 s")
	}
	const (
		users, perUser = 10, 10
		window         = 3  // most messages a user has waiting for a reply: no "Queue full"
		killAfter      = 30 // messages accepted before the leader is shut down
	)
	total := users * perUser
	begin := time.Now()
	cl := natstest.RunCluster(t, 3)
	_, js := cl.Connect(t)
	clusterUp := time.Since(begin)
	logDir := sharedDir(t)
	runlog := filepath.Join(logDir, "runs.log")
	inst := startServe(t, "TEXTSLASH_AGENT=shell", "TEXTSLASH_LOG_LEVEL=info", "TEXTSLASH_CONCURRENCY=4",
		"NATS_URL="+cl.URL(), "TEXTSLASH_REPLICAS=3", "TEXTSLASH_SANDBOX_SHARE="+logDir)
	t.Logf("cluster formed in %v, textslash ready %v later", clusterUp.Round(time.Millisecond), (time.Since(begin) - clusterUp).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()

	// Every stream (buckets and object store included) and the durable
	// consumers really have three replicas: losing one server loses nothing.
	for _, name := range []string{contract.StreamIn, contract.StreamJobs, contract.StreamQueue, contract.StreamEvents,
		contract.StreamTimers, "KV_" + contract.BucketUsers, "KV_" + contract.BucketEgress, "OBJ_" + contract.BucketMedia} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		info := s.CachedInfo()
		if info.Config.Replicas != 3 || info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			t.Fatalf("stream %s: %d replicas (cluster %+v); want 3", name, info.Config.Replicas, info.Cluster)
		}
	}
	for stream, cfgs := range bus.Consumers() {
		for _, cfg := range cfgs {
			c, err := js.Consumer(ctx, stream, cfg.Durable)
			if err != nil {
				t.Fatalf("consumer %s on %s: %v", cfg.Durable, stream, err)
			}
			if info := c.CachedInfo(); info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
				t.Fatalf("consumer %s on %s: cluster %+v; want 3 replicas", cfg.Durable, stream, info.Cluster)
			}
		}
	}

	chats := make([]*chat, users)
	followers := make([]*sseFollower, users)
	for i := range chats {
		chats[i] = inst.newChat(t)
		followers[i] = &sseFollower{}
		go followers[i].follow(ctx, chats[i])
	}
	token := func(c *chat, i int) string { return fmt.Sprintf("tok-%s-%02d", c.User.ID[:12], i) }

	// Replies so far, per user, from EVENTS: what paces the senders.
	events, err := js.Stream(ctx, contract.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	var answered sync.Map // user key → uint64
	go func() {
		for ctx.Err() == nil {
			// A request in flight when its server goes down is never
			// answered: bound each one.
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			info, err := events.Info(rctx, jetstream.WithSubjectFilter(contract.AllEvents(contract.KindDone)))
			cancel()
			if err == nil {
				for subject, n := range info.State.Subjects {
					answered.Store(subject, n)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	answeredOf := func(c *chat) int {
		n, _ := answered.Load(contract.EventSubject(c.User, contract.KindDone))
		v, _ := n.(uint64)
		return int(v)
	}

	var (
		accepted, retries atomic.Int64
		killed            atomic.Bool
		afterKill         sync.Map // "<user id> <message id>" → true: sent once the leader was down
	)
	// post sends message i of a user, retrying with the same id until it
	// is stored: while the stream elects a new leader it may be refused.
	post := func(c *chat, i int) {
		id := fmt.Sprintf("m%02d", i)
		if killed.Load() {
			afterKill.Store(c.User.ID+" "+id, true)
		}
		text := fmt.Sprintf("echo %s %s >> %s; echo %s", c.User.ID, id, runlog, token(c, i))
		body, _ := json.Marshal(map[string]string{"id": id, "text": text})
		for ctx.Err() == nil {
			resp, err := c.client.Post(inst.URL+"/api/messages", "application/json", bytes.NewReader(body))
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					accepted.Add(1)
					return
				}
			}
			retries.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("%s %s: never accepted", c.User, id)
	}
	start := time.Now()
	var senders sync.WaitGroup
	for _, c := range chats {
		senders.Go(func() {
			for i := range perUser {
				for i-answeredOf(c) >= window && ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond)
				}
				post(c, i)
			}
		})
	}

	// Mid-load, shut down the server leading IN.
	natstest.CheckFor(t, 30*time.Second, 5*time.Millisecond, func() error {
		if n := accepted.Load(); n < killAfter {
			return fmt.Errorf("%d messages accepted; want %d before the kill", n, killAfter)
		}
		return nil
	})
	var leader string
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		info, err := streamInfo(ctx, js, contract.StreamIn)
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" {
			return errors.New("IN has no leader")
		}
		leader = info.Cluster.Leader
		return nil
	})
	victim := cl.Index(leader)
	ns := cl.Server(victim)
	onVictim := textslashConnected(t, ns)
	inFlight := int(accepted.Load())
	for _, c := range chats {
		inFlight -= answeredOf(c)
	}
	metaLeader := ns.JetStreamIsLeader()
	killedAt := time.Now()
	cl.Shutdown(victim)
	killed.Store(true)
	t.Logf("shut down %s (leader of IN; meta leader: %t; textslash connected to it: %t) after %v, %d accepted, %d awaiting their reply",
		leader, metaLeader, onVictim, killedAt.Sub(start).Round(time.Millisecond), accepted.Load(), inFlight)

	senders.Wait()
	// Every message gets its reply.
	var dones map[string][]contract.Event
	natstest.CheckFor(t, 40*time.Second, 50*time.Millisecond, func() error {
		dones, err = doneEvents(ctx, js)
		if err != nil {
			return err
		}
		if n := len(dones); n < total {
			return fmt.Errorf("%d of %d messages answered", n, total)
		}
		return nil
	})
	t.Logf("all %d replies %v after the start, %v after the kill; %d posts retried",
		total, time.Since(start).Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond), retries.Load())

	// Exactly one reply each, with the message's own output; each ran
	// once, in the order its user sent it.
	runsOf, order := readRunLog(t, runlog)
	after := 0
	for _, c := range chats {
		for i := range perUser {
			key := fmt.Sprintf("%s m%02d", c.User.ID, i)
			if _, ok := afterKill.Load(key); ok {
				after++
			}
			switch replies := dones[key]; {
			case len(replies) != 1:
				t.Errorf("%s: %d final replies; want 1", key, len(replies))
			case replies[0].Status != contract.StatusOK || replies[0].Text != token(c, i):
				t.Errorf("%s: reply %q (%s); want %q (ok)", key, replies[0].Text, replies[0].Status, token(c, i))
			}
			if runsOf[key] != 1 {
				t.Errorf("%s: ran %d times; want 1", key, runsOf[key])
			}
		}
		if got := order[c.User.ID]; !slices.IsSorted(got) {
			t.Errorf("%s ran in order %v", c.User, got)
		}
	}
	if after < users {
		t.Errorf("%d messages sent after the kill; want at least %d", after, users)
	}
	t.Logf("%d messages sent after the kill, all answered", after)

	// The web chat shows each user every reply, once, in order. A page
	// whose ordered consumer was on the lost server sees nothing until
	// nats.go misses two of its heartbeats (5 s each) and makes a new one.
	for k, c := range chats {
		natstest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			got := followers[k].replies()
			if len(got) < perUser {
				return fmt.Errorf("%s: web chat shows %d replies; want %d", c.User, len(got), perUser)
			}
			return nil
		})
		var want []string
		for i := range perUser {
			want = append(want, token(c, i))
		}
		if got := followers[k].replies(); !slices.Equal(got, want) {
			t.Errorf("%s: web chat shows replies %q; want %q", c.User, got, want)
		}
	}
	reconnects := 0
	for _, f := range followers {
		f.mu.Lock()
		reconnects += f.reconnects
		f.mu.Unlock()
	}
	t.Logf("web chats show every reply in order (%d event streams reopened)", reconnects)

	// IN has a new leader among the survivors, still on three replicas
	// (one offline), and textslash is still running.
	natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		info, err := streamInfo(ctx, js, contract.StreamIn)
		if err != nil {
			return err
		}
		if info.Cluster == nil || info.Cluster.Leader == "" || info.Cluster.Leader == leader || info.Config.Replicas != 3 {
			return fmt.Errorf("IN after the kill: replicas %d, cluster %+v; want a new leader", info.Config.Replicas, info.Cluster)
		}
		return nil
	})
	select {
	case <-inst.exited:
		t.Fatal("textslash exited")
	default:
	}

	// Nobody is left working, and nothing is left waiting.
	for _, c := range chats {
		natstest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error { return stateIdle(ctx, js, c.User) })
	}
	// An acknowledgement in flight to the lost server is lost too: its
	// message comes again after the consumer's AckWait, and is then
	// recognised as done and dropped.
	var ackWait time.Duration
	for _, cfgs := range bus.Consumers() {
		for _, cfg := range cfgs {
			ackWait = max(ackWait, cfg.AckWait)
		}
	}
	for _, name := range []string{contract.StreamQueue, contract.StreamJobs, contract.StreamIn} {
		natstest.CheckFor(t, max(time.Until(killedAt.Add(ackWait+10*time.Second)), 5*time.Second), 50*time.Millisecond, func() error {
			info, err := streamInfo(ctx, js, name)
			if err != nil {
				return err
			}
			if info.State.Msgs != 0 {
				return fmt.Errorf("stream %s holds %d messages at the end", name, info.State.Msgs)
			}
			return nil
		})
	}
	t.Logf("everything settled %v after the cluster started", time.Since(begin).Round(time.Millisecond))
}

// textslashConnected reports whether textslash's connection is on ns.
func textslashConnected(t *testing.T, ns *server.Server) bool {
	t.Helper()
	cz, err := ns.Connz(&server.ConnzOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ci := range cz.Conns {
		if ci.Name == "textslash" {
			return true
		}
	}
	return false
}

// sseFollower reads a web chat session's events the way the page does:
// when the stream breaks it reconnects with Last-Event-ID.
type sseFollower struct {
	mu         sync.Mutex
	last       string
	done       []string // the replies' texts, in the order shown
	reconnects int
}

func (f *sseFollower) follow(ctx context.Context, c *chat) {
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.inst.URL+"/api/events", nil)
		f.mu.Lock()
		if f.last != "" {
			req.Header.Set("Last-Event-ID", f.last)
			f.reconnects++
		}
		f.mu.Unlock()
		resp, err := c.client.Do(req)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		ch := make(chan sseEvent, 100)
		go func() { defer close(ch); readSSE(resp.Body, ch) }()
		for ev := range ch {
			f.mu.Lock()
			f.last = ev.ID
			if ev.Kind == string(contract.KindDone) {
				f.done = append(f.done, ev.Event.Text)
			}
			f.mu.Unlock()
		}
		resp.Body.Close()
	}
}

func (f *sseFollower) replies() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.done)
}

// streamInfo asks for a stream's info, within 2 s: a request in flight to
// a server that goes down is never answered.
func streamInfo(ctx context.Context, js jetstream.JetStream, name string) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.Info(ctx)
}
