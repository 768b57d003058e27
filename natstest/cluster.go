package natstest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is n embedded nats-servers on loopback forming one JetStream
// cluster. Each keeps its client and route ports and its store for the
// whole test, so a server shut down can be started again as the same peer
// and clients can list every server's URL up front.
type Cluster struct {
	// Name is the cluster's name; servers are named <Name>-1 … <Name>-n.
	Name string

	t       testing.TB
	mu      sync.Mutex
	servers []*server.Server
	client  []int // client port per server
	route   []int // route (cluster) port per server
	store   []string
}

// RunCluster starts n JetStream servers (n ≥ 3 for a quorum that survives
// one loss) routed to each other on loopback, each with its store in
// t.TempDir, and waits until the cluster has a meta leader that sees every
// peer. The servers are shut down when t ends.
func RunCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("RunCluster: n = %d", n)
	}
	c := &Cluster{
		Name:    "natstest",
		t:       t,
		servers: make([]*server.Server, n),
		client:  make([]int, n),
		route:   make([]int, n),
		store:   make([]string, n),
	}
	t.Cleanup(c.shutdownAll)
	// Routes name their peers' ports before the peers listen, so every
	// port is picked first: free when checked, not held. Another process
	// may take one before its server listens; then all start again, with
	// fresh stores on other ports.
	for try := 1; ; try++ {
		err := c.startAll(t)
		if err == nil {
			break
		}
		c.shutdownAll()
		if try == 3 || !errors.Is(err, errPortTaken) {
			t.Fatal(err)
		}
		t.Logf("natstest: start the cluster again on other ports: %v", err)
	}
	c.WaitReady(t)
	return c
}

// errPortTaken: a port a server was given had been taken meanwhile.
var errPortTaken = errors.New("port taken")

// startAll picks ports and stores for every server and starts them all,
// waiting until each takes clients.
func (c *Cluster) startAll(t testing.TB) error {
	n := len(c.servers)
	ports := freePorts(t, 2*n)
	for i := range n {
		c.client[i], c.route[i] = ports[2*i], ports[2*i+1]
		c.store[i] = t.TempDir()
	}
	// Start all before waiting for any: a server with JetStream waits for
	// its routes to form the meta group.
	logs := make([]*errorLog, n)
	for i := range n {
		ns, err := server.NewServer(c.options(i))
		if err != nil {
			return fmt.Errorf("new nats server %d: %w", i+1, err)
		}
		logs[i] = &errorLog{}
		ns.SetLoggerV2(logs[i], false, false, false)
		c.mu.Lock()
		c.servers[i] = ns
		c.mu.Unlock()
		go ns.Start()
	}
	for i, ns := range c.servers {
		if err := ready(ns, logs[i]); err != nil {
			return fmt.Errorf("nats server %s: %w", c.ServerName(i), err)
		}
	}
	return nil
}

// ready waits up to 10 s until ns takes clients; it fails early, with
// errPortTaken, once ns logged that a port of its is in use.
func ready(ns *server.Server, logs *errorLog) error {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if ns.ReadyForConnections(100 * time.Millisecond) {
			return nil
		}
		for _, line := range logs.all() {
			if strings.Contains(line, "address already in use") {
				return fmt.Errorf("%w: %s", errPortTaken, line)
			}
		}
	}
	return errors.New("not ready in 10s")
}

func (c *Cluster) options(i int) *server.Options {
	var routes []string
	for j, p := range c.route {
		if j != i {
			routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
		}
	}
	return &server.Options{
		ServerName: c.ServerName(i),
		Host:       "127.0.0.1",
		Port:       c.client[i],
		JetStream:  true,
		StoreDir:   c.store[i],
		NoSigs:     true,
		NoLog:      true,
		Cluster: server.ClusterOpts{
			Name: c.Name,
			Host: "127.0.0.1",
			Port: c.route[i],
			// One route per pair of servers (no pool): a server is
			// fully routed when it has one route per peer.
			PoolSize: -1,
		},
		Routes: server.RoutesFromStr(strings.Join(routes, ",")),
	}
}

// freePorts finds n distinct free loopback ports below the kernel's
// ephemeral range, so no outgoing connection takes one while a server is
// down and started again.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			t.Fatal("no free ports")
		}
		port := 10000 + rand.IntN(10000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		held = append(held, l)
		ports = append(ports, port)
	}
	return ports
}

// ServerName is the name of server i (from 0), as JetStream reports it in
// stream and consumer info (ClusterInfo.Leader, PeerInfo.Name).
func (c *Cluster) ServerName(i int) string { return fmt.Sprintf("%s-%d", c.Name, i+1) }

// Index is the index of the server named name, or -1.
func (c *Cluster) Index(name string) int {
	for i := range c.servers {
		if c.ServerName(i) == name {
			return i
		}
	}
	return -1
}

// Server is server i; after Shutdown it is the stopped server until
// Restart.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.servers[i]
}

// URL lists every server's client URL, comma-separated, as NATS_URL and
// nats.Connect take them; stopped servers included (their ports stay).
func (c *Cluster) URL() string {
	urls := make([]string, len(c.client))
	for i, p := range c.client {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	return strings.Join(urls, ",")
}

// Connect connects to the cluster (any server, reconnecting to the others
// forever) and closes the connection when t ends.
func (c *Cluster) Connect(t testing.TB) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatalf("connect to cluster: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

// Shutdown stops server i and waits until it is down, as a crash of that
// machine would (its store stays for Restart).
func (c *Cluster) Shutdown(i int) {
	ns := c.Server(i)
	ns.Shutdown()
	ns.WaitForShutdown()
}

// Restart starts server i again on its ports and store, after Shutdown,
// and waits until it takes clients.
func (c *Cluster) Restart(t testing.TB, i int) {
	t.Helper()
	if c.Server(i).Running() {
		t.Fatalf("restart %s: still running", c.ServerName(i))
	}
	ns, err := server.NewServer(c.options(i))
	if err != nil {
		t.Fatalf("restart %s: %v", c.ServerName(i), err)
	}
	c.mu.Lock()
	c.servers[i] = ns
	c.mu.Unlock()
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatalf("%s not ready in 10s after restart", c.ServerName(i))
	}
}

// MetaLeader is the running server that leads the JetStream meta group,
// or nil during an election.
func (c *Cluster) MetaLeader() *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ns := range c.servers {
		if ns.Running() && ns.JetStreamIsLeader() {
			return ns
		}
	}
	return nil
}

// WaitReady waits until every running server is routed to every other
// running one, there is a meta leader that sees them all as JetStream peers,
// every one is current with the meta group, and a stream with one replica
// per running server can be placed: the cluster takes streams and buckets
// with as many replicas as servers run. (Right after the meta group forms,
// routes may still be reconnecting, and while a route is new its server is
// not yet a candidate for placement: "no suitable peers for placement".)
func (c *Cluster) WaitReady(t testing.TB) {
	t.Helper()
	var running []*server.Server
	CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		running = running[:0]
		c.mu.Lock()
		for _, ns := range c.servers {
			if ns.Running() {
				running = append(running, ns)
			}
		}
		c.mu.Unlock()
		for _, ns := range running {
			if n := ns.NumRoutes(); n != len(running)-1 {
				return fmt.Errorf("%s has %d routes; want %d", ns.Name(), n, len(running)-1)
			}
			if !ns.JetStreamIsCurrent() {
				return fmt.Errorf("%s is not current with the meta group", ns.Name())
			}
		}
		leader := c.MetaLeader()
		if leader == nil {
			return errors.New("no JetStream meta leader")
		}
		if peers := leader.JetStreamClusterPeers(); len(peers) != len(running) {
			return fmt.Errorf("meta leader %s sees peers %v; want %d", leader.Name(), peers, len(running))
		}
		return nil
	})
	nc, err := nats.Connect(running[0].ClientURL())
	if err != nil {
		t.Fatalf("connect to %s: %v", running[0].Name(), err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	const probe = "natstest_ready"
	CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: probe, Subjects: []string{"natstest.ready"},
			Storage: jetstream.MemoryStorage, Replicas: len(running)})
		if err != nil {
			return fmt.Errorf("place a stream on %d replicas: %w", len(running), err)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, probe); err != nil {
		t.Fatalf("delete the probe stream: %v", err)
	}
}

func (c *Cluster) shutdownAll() {
	c.mu.Lock()
	servers := append([]*server.Server(nil), c.servers...)
	c.mu.Unlock()
	for _, ns := range servers {
		if ns != nil {
			ns.Shutdown()
		}
	}
	for _, ns := range servers {
		if ns != nil {
			ns.WaitForShutdown()
		}
	}
}
